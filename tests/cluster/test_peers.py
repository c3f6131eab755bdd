"""Peer lists, pod ordinals and waiting for peers."""

import logging
import socket

import pytest
from jet.cluster.links.peers import (
    PeerAddress,
    member_index_from_pod_name,
    parse_address,
    parse_peers,
    tcp_probe,
    wait_for_peers,
)


def test_comma_list():
    assert parse_peers("a:5701, b.example:5702,[::1]:5703") == [
        PeerAddress("a", 5701), PeerAddress("b.example", 5702), PeerAddress("::1", 5703)]
    assert str(PeerAddress("::1", 5703)) == "[::1]:5703" and str(PeerAddress("a", 1)) == "a:1"


def test_hostfile(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# members\nm0:5701\n\n  m1:5701  # second\n")
    assert parse_peers(str(hostfile)) == [PeerAddress("m0", 5701), PeerAddress("m1", 5701)]
    hostfile.write_text("m0:5701\nm1\n")
    with pytest.raises(ValueError, match=r"line 2.*expected host:port, got 'm1'"):
        parse_peers(str(hostfile))
    hostfile.write_text("# nothing\n")
    with pytest.raises(ValueError, match="lists no host:port"):
        parse_peers(str(hostfile))


def test_dns_template():
    peers = parse_peers("dns:wc-member-{i}.wc-members.default.svc.cluster.local:5701", replicas=3)
    assert [str(p) for p in peers] == [f"wc-member-{i}.wc-members.default.svc.cluster.local:5701" for i in range(3)]
    with pytest.raises(ValueError, match="replicas"):
        parse_peers("dns:m-{i}:5701")
    with pytest.raises(ValueError, match=r"\{i\}"):
        parse_peers("dns:m-0:5701", replicas=2)


@pytest.mark.parametrize("spec, message", [
    ("", "empty"), ("/no/such/hostfile", "neither host:port nor an existing hostfile"),
    ("a:1,b", "got 'b'"), ("a:0", "1..65535"), ("a:99999", "1..65535"), ("a:port", "got 'a:port'"),
])
def test_bad_peer_specs_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_peers(spec)


def test_member_index_from_pod_name():
    assert member_index_from_pod_name("wc-member-2") == 2
    assert member_index_from_pod_name("a-b-c-17") == 17
    with pytest.raises(ValueError, match="'wc-member' has no trailing ordinal"):
        member_index_from_pod_name("wc-member")
    with pytest.raises(ValueError, match="'my-pod-x1'"):
        member_index_from_pod_name("my-pod-x1")


class FakeTime:
    def __init__(self):
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_wait_for_peers_backs_off_and_logs_who_it_sees(caplog):
    time_ = FakeTime()
    peers = [parse_address(f"m{i}:5701") for i in range(3)]
    up_at = {"m1": 0.5, "m2": 1.2}
    probed = []

    def probe(address):
        probed.append(address.host)
        return time_.now >= up_at[address.host]

    with caplog.at_level(logging.INFO, logger="jet.cluster.links.peers"):
        wait_for_peers(peers, 0, timeout_s=30, probe=probe, clock=time_.clock, sleep=time_.sleep)
    assert "m0" not in probed  # never probes itself
    assert time_.sleeps == [0.05, 0.1, 0.2, 0.4, 0.5]
    assert "sees member 1 at m1:5701" in caplog.text and "sees member 2 at m2:5701" in caplog.text


def test_wait_for_peers_times_out_naming_the_missing():
    time_ = FakeTime()
    peers = [parse_address(f"m{i}:5701") for i in range(3)]
    with pytest.raises(TimeoutError, match=r"member 1 did not see members 0 \(m0:5701\) within 10 s"):
        wait_for_peers(peers, 1, timeout_s=10, probe=lambda a: a.host != "m0", clock=time_.clock, sleep=time_.sleep)
    assert time_.sleeps == pytest.approx([0.05, 0.1, 0.2, 0.4] + [0.5] * 18 + [0.25])  # capped, bounded


def test_tcp_probe_on_loopback():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert tcp_probe(PeerAddress("127.0.0.1", port))
    assert not tcp_probe(PeerAddress("127.0.0.1", port))
    assert not tcp_probe(PeerAddress("no-such-host.invalid", 5701))
