"""The Spark side's links to members speak TLS when told the members' CA, as the operator tells
Spark drivers and executors with ``$JET_TLS_CA_FILE`` (no Spark needed: the links themselves)."""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterator
from pathlib import Path

import pytest
from jet.cluster.links.auth import TlsConfig, write_self_signed_tls
from jet.cluster.links.transport import MemberServer
from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import JetSparkError, MemberLink
from jet.connectors.spark.options import JetOptionError, JetOptions

TOKEN = "spark-tls-token"
WAIT_S = 10.0


class TlsMember:
    """A member's gRPC server with TLS that records every frame it receives."""

    def __init__(self, tls: TlsConfig) -> None:
        self.tls = tls
        self.frames: queue.SimpleQueue = queue.SimpleQueue()
        self.server = MemberServer(0, TOKEN, tls, host="127.0.0.1",
                                   on_client_frame=lambda peer, frame: self.frames.put((peer, frame))).start()
        self.address = f"127.0.0.1:{self.server.port}"


@pytest.fixture
def member(tmp_path: Path) -> Iterator[TlsMember]:
    started = TlsMember(write_self_signed_tls(tmp_path))
    yield started
    started.server.stop(0)


def _options(member: TlsMember, **extra: str) -> JetOptions:
    return JetOptions.parse({"job": "j", "vertex": "v", "members": member.address, "token": TOKEN, **extra})


def _link(options: JetOptions) -> MemberLink:
    return MemberLink(options.members[0], 0, options.token, options.tls())


def test_the_ca_from_the_environment_secures_the_links(member: TlsMember, monkeypatch) -> None:
    monkeypatch.setenv("JET_TLS_CA_FILE", member.tls.cert_file)
    options = _options(member)
    assert options.tls_ca_file == member.tls.cert_file
    monkeypatch.delenv("JET_TLS_CA_FILE")
    assert JetOptions.parse(options.as_spark_options()) == options  # what executors receive
    link = _link(options)
    _assert_reaches(member, link)


def test_a_link_without_the_ca_cannot_reach_a_tls_member(member: TlsMember, monkeypatch) -> None:
    monkeypatch.delenv("JET_TLS_CA_FILE", raising=False)
    options = _options(member)
    assert options.tls() is None
    _assert_refused(member, _link(options))


def test_a_link_with_another_ca_refuses_the_member(member: TlsMember, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    options = _options(member, tls_ca_file=write_self_signed_tls(other).cert_file)
    _assert_refused(member, _link(options))


def _assert_refused(member: TlsMember, link: MemberLink) -> None:
    try:
        with contextlib.suppress(JetSparkError):  # the refusal may come before the send
            link.send({"op": p.PROBE, "job": "j", "vertex": "v"})
        header, _ = link.chunks.get(timeout=WAIT_S)  # the lost connection, reported as an error
        assert header["op"] == p.ERROR, header
        assert member.frames.empty()
    finally:
        link.close()


def test_a_missing_ca_file_is_refused_naming_where_it_came_from(member: TlsMember, monkeypatch) -> None:
    with pytest.raises(JetOptionError, match="option 'tls_ca_file': the CA certificate file '/nowhere/ca.crt'"):
        _options(member, tls_ca_file="/nowhere/ca.crt")
    monkeypatch.setenv("JET_TLS_CA_FILE", "/nowhere/ca.crt")
    with pytest.raises(JetOptionError, match=r"\$JET_TLS_CA_FILE: the CA certificate file"):
        _options(member)


def test_a_reopened_link_keeps_speaking_tls(member: TlsMember) -> None:
    first = _link(_options(member, tls_ca_file=member.tls.cert_file))
    first.close()
    link = first.reopened()
    _assert_reaches(member, link)


def _assert_reaches(member: TlsMember, link: MemberLink) -> None:
    """A probe on ``link`` arrives at ``member`` from the link's own index and the link stays up."""
    try:
        link.send({"op": p.PROBE, "job": "j", "vertex": "v"})
        peer, _ = member.frames.get(timeout=WAIT_S)
        assert peer == link.peer_index
        link.check()
    finally:
        link.close()
