"""A member that comes back rejoins by itself: member 0 after a kill (its peers take its new
streams), and a member started again in this process, whose peer kept trying meanwhile."""

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from jet.cluster.edges import early_frames
from jet.cluster.edges.chunk_packets import encode_chunk
from jet.cluster.links.membership import MAX_DIAL_BACKOFF_S
from jet.cluster.local.local_cluster import free_ports
from jet.cluster.member import Member
from jet.cluster.settings import MemberSettings

from tests.cluster.cluster_support import wait_until
from tests.cluster.member_loss_support import (
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_TIMEOUT_MS,
    log_lines,
    quick_cluster,
    run_partitioned_job_on_every_member,
    wait_logged,
    wait_rejoined,
)


def test_a_killed_member_0_is_restarted_the_others_take_its_new_streams_and_a_new_job_runs(tmp_path):
    with quick_cluster(tmp_path / "logs") as cluster:
        run_partitioned_job_on_every_member(cluster, tmp_path / "before")
        cluster.kill_member(0)
        for index in (1, 2):
            wait_logged(cluster, index, "lost its connection with member 0", f"member {index} logging the loss")
        wait_rejoined(cluster, restarts=1)
        for index in (1, 2):
            assert log_lines(cluster, index, r"member 0 \(.*\) rejoined"), f"member {index} saw no rejoin"
        run_partitioned_job_on_every_member(cluster, tmp_path / "after")
        for index in range(3):
            assert not log_lines(cluster, index, " ERROR "), f"member {index} logged an error"


def member_settings(index: int, ports: list[int]) -> MemberSettings:
    return MemberSettings(port=ports[index], http_port=0, host="127.0.0.1", member_index=index,
                          peers=",".join(f"127.0.0.1:{port}" for port in ports), token="rejoin-token",
                          member_key="rejoin-member-key", cooperative_threads=1,
                          heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS, heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS)


def start_members(*members: Member) -> None:
    """Start members together (each start waits for the others)."""
    with ThreadPoolExecutor(len(members)) as pool:
        for started in pool.map(Member.start, members):
            assert started.connected.is_set()


def test_a_member_keeps_trying_a_peer_that_is_down_logging_it_once_and_takes_it_back(caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="jet.cluster")
    ports = free_ports(2)
    member0, member1 = Member(member_settings(0, ports)), Member(member_settings(1, ports))
    start_members(member0, member1)
    try:
        assert member0.cluster_ready()
        member1.stop()
        wait_until(lambda: not member0.connected.is_set(), what="member 0 noticing member 1 left")
        time.sleep(3 * MAX_DIAL_BACKOFF_S)  # several rounds of redialling a peer that is down
        unreachable = [r for r in caplog.records if "cannot reach member 1" in r.getMessage()]
        assert len(unreachable) == 1 and unreachable[0].levelno == logging.INFO, unreachable
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

        member1 = Member(member_settings(1, ports)).start()  # the same index and port: a restart
        wait_until(member0.cluster_ready, what="member 0 to see the cluster whole again")
        assert member0.membership.joins == {1: 2} and member1.membership.joins == {0: 1}
        assert any("member 0: member 1 (127.0.0.1:%d) rejoined" % ports[1] in r.getMessage() for r in caplog.records)

        # A frame of an execution cancelled by the loss, still in flight, reaches a member that
        # never knew it: held (its init might be on its way), routed nowhere, dropped after the hold.
        member0.membership.send(1, encode_chunk(execution_id=424242, dest_vertex_id=0, dest_ordinal=0,
                                                entries=["late"]))
        wait_until(lambda: member1.network.held_frames == 1, what="member 1 holding the stale frame")
        monkeypatch.setattr(early_frames, "HOLD_S", 0.0)
        wait_until(lambda: member1.network.dropped_frames == 1, what="member 1 dropping the stale frame")
        assert member1.network.held_frames == 0
        assert member0.cluster_ready()
    finally:
        member1.stop()
        member0.stop()


def test_a_ping_that_waits_for_the_cluster_answers_once_the_late_member_is_up():
    """``cluster_ready(wait_s)`` (and a client's ping with ``ready_wait_s``) answers when the last
    member connects, not at the end of its wait and not false at once."""
    from jet.cluster.client import JetClient

    ports = free_ports(2)
    member0, member1 = Member(member_settings(0, ports)), Member(member_settings(1, ports))
    start_members(member0, member1)
    member1.stop()
    wait_until(lambda: not member0.connected.is_set(), what="member 0 noticing member 1 left")
    client = JetClient([f"127.0.0.1:{ports[0]}"], "rejoin-token")
    try:
        assert client.ping(cluster=True)["cluster_ready"] is False
        with ThreadPoolExecutor(2) as pool:
            by_member0 = pool.submit(member0.cluster_ready, 60.0)
            by_client = pool.submit(client.ping, cluster=True, ready_wait_s=25.0)
            time.sleep(0.5)
            assert not by_member0.done() and not by_client.done(), "they wait for member 1"
            started = time.monotonic()
            member1 = Member(member_settings(1, ports)).start()
            assert by_member0.result(timeout=20) is True
            assert by_client.result(timeout=20)["cluster_ready"] is True
            assert time.monotonic() - started < 20, "answered at member 1's join, not at the end of the wait"
    finally:
        client.close()
        member1.stop()
        member0.stop()


def test_a_ping_with_a_wait_that_is_not_a_number_of_seconds_is_refused_naming_it():
    import pytest
    from jet.cluster.client import JetClient
    from jet.cluster.links import messages
    from jet.cluster.links.transport import ControlCallError

    ports = free_ports(1)
    member = Member(MemberSettings(port=ports[0], http_port=0, host="127.0.0.1", token="t", cooperative_threads=1))
    member.start()
    client = JetClient([f"127.0.0.1:{ports[0]}"], "t")
    try:
        for bad in ("soon", -1, None):
            with pytest.raises(ControlCallError, match=r"ping's wait_s must be a number of seconds >= 0, got"):
                client._call(messages.PING, {"wait_s": bad}, timeout_s=5)
        assert client.ping(ready_wait_s=0.5)["connected"] is True
    finally:
        client.close()
        member.stop()
