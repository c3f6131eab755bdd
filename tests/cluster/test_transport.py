"""The gRPC transport, with real servers on loopback in this process and in peer processes."""

import pathlib
import pickle
import threading
import time

import cloudpickle
import grpc
import pytest

from jet.cluster.auth import MEMBER_METADATA_KEY, TOKEN_METADATA_KEY
from jet.cluster.chunk_packets import decode_chunk
from jet.cluster.packets import PacketFormatError
from jet.cluster.transport import (
    CONTROL_METHOD,
    STREAM_METHOD,
    ControlCallError,
    MemberServer,
    PeerConnection,
    decode_control_request,
    encode_control_request,
)

TOKEN = "s3cret-cluster-token"
WAIT_S = 10


class Recorder:
    """Records callback invocations; ``wait(n)`` polls with a deadline for n of them."""

    def __init__(self):
        self.calls: list[tuple] = []
        self._changed = threading.Condition()

    def __call__(self, *args):
        with self._changed:
            self.calls.append(args)
            self._changed.notify_all()

    def wait(self, count: int = 1, timeout_s: float = WAIT_S) -> list[tuple]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.calls) >= count, timeout_s), \
                f"{len(self.calls)} of {count} calls after {timeout_s} s: {self.calls[-3:]}"
            return list(self.calls)


class Unpickling:
    """A control handler that records its calls and unpickles their payloads (as the real one will)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def __call__(self, peer, msg_type, payload):
        self.calls.append((peer, msg_type))
        return cloudpickle.dumps(("ok", pickle.loads(payload)))


class TouchFile:
    """A payload that creates a marker file when it is unpickled."""

    def __init__(self, path: pathlib.Path):
        self.path = path

    def __reduce__(self):
        return (pathlib.Path.touch, (self.path,))


@pytest.fixture
def server():
    servers = []

    def make(**kwargs) -> MemberServer:
        kwargs.setdefault("token", TOKEN)
        created = MemberServer(0, host="127.0.0.1", **kwargs).start()
        servers.append(created)
        return created

    yield make
    for created in servers:
        created.stop(0)


@pytest.fixture
def connect():
    connections = []

    def make(port: int, **kwargs) -> PeerConnection:
        kwargs.setdefault("token", TOKEN)
        kwargs.setdefault("self_index", 1)
        created = PeerConnection(f"127.0.0.1:{port}" if "address" not in kwargs else kwargs.pop("address"),
                                 peer_index=kwargs.pop("peer_index", 0), **kwargs)
        connections.append(created)
        return created

    yield make
    for created in connections:
        created.close()


def test_many_frames_flow_both_ways_in_order(server, connect):
    at_server, at_client = Recorder(), Recorder()
    member0 = server(on_frame=at_server)
    connection = connect(member0.port, self_index=3, on_frame=at_client)
    frames = [b"frame-%d-" % i + bytes(i % 300) for i in range(3000)]
    for frame in frames:
        connection.send(frame)
    assert at_server.wait(len(frames)) == [(3, frame) for frame in frames]
    link = member0.wait_for_peer(3, WAIT_S)
    for frame in frames:
        member0.send(3, frame)
    assert at_client.wait(len(frames)) == [(0, frame) for frame in frames]
    assert link.pending_frames() == 0


def test_control_calls_round_trip_fail_and_time_out(server, connect):
    release = threading.Event()

    def handle(peer, msg_type, payload):
        if msg_type == "fail":
            raise ValueError("vertex 'map' has no supplier")
        if msg_type == "block":
            release.wait(WAIT_S)
        return cloudpickle.dumps((peer, msg_type, cloudpickle.loads(payload)))

    member0 = server(on_control=handle)
    connection = connect(member0.port, self_index=2)
    function = lambda x: x * 2  # noqa: E731 - travels with cloudpickle
    peer, msg_type, back = cloudpickle.loads(connection.control("init", cloudpickle.dumps(function)))
    assert (peer, msg_type, back(21)) == (2, "init", 42)
    with pytest.raises(ControlCallError, match="INTERNAL.*ValueError: vertex 'map' has no supplier") as failed:
        connection.control("fail", cloudpickle.dumps(None))
    assert failed.value.code is grpc.StatusCode.INTERNAL and failed.value.msg_type == "fail"
    with pytest.raises(ControlCallError, match="DEADLINE_EXCEEDED"):
        connection.control("block", cloudpickle.dumps(None), timeout_s=0.3)
    release.set()


def test_control_request_codec():
    assert decode_control_request(encode_control_request("start", b"\x00payload")) == ("start", b"\x00payload")
    for bad in (b"", b"\x00", b"\x00\x00rest", b"\x00\x09short", b"\x00\x02\xff\xfe"):
        with pytest.raises(PacketFormatError):
            decode_control_request(bad)
    with pytest.raises(ValueError, match="message type"):
        encode_control_request("", b"")


@pytest.mark.parametrize("metadata", [
    ((TOKEN_METADATA_KEY, "wrong-token"), (MEMBER_METADATA_KEY, "1")),
    ((MEMBER_METADATA_KEY, "1"),),
    ((TOKEN_METADATA_KEY, TOKEN[:-1]), (MEMBER_METADATA_KEY, "1")),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "not-a-number")),
], ids=["wrong", "missing", "prefix", "bad-member-index"])
def test_unauthenticated_calls_never_reach_a_handler(server, tmp_path, metadata):
    marker = tmp_path / "unpickled"
    frames, control = Recorder(), Unpickling()
    member0 = server(on_frame=frames, on_control=control)
    payload = pickle.dumps(TouchFile(marker))
    with grpc.insecure_channel(f"127.0.0.1:{member0.port}") as channel:
        with pytest.raises(grpc.RpcError) as rejected:
            channel.unary_unary(CONTROL_METHOD)(encode_control_request("init", payload),
                                               metadata=metadata, timeout=WAIT_S)
        assert rejected.value.code() is grpc.StatusCode.UNAUTHENTICATED
        stream = channel.stream_stream(STREAM_METHOD)(iter([payload, b"\x01garbage"]), metadata=metadata,
                                                      timeout=WAIT_S)
        with pytest.raises(grpc.RpcError) as rejected:
            list(stream)
        assert rejected.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert control.calls == [] and frames.calls == []
    assert not marker.exists()
    assert member0.link(1) is None


def test_the_marker_payload_does_create_the_file_once_authenticated(server, connect, tmp_path):
    # The positive control of the test above: the same payload, the right token.
    marker = tmp_path / "unpickled"
    control = Unpickling()
    member0 = server(on_control=control)
    connect(member0.port).control("init", pickle.dumps(TouchFile(marker)))
    assert control.calls == [(1, "init")] and marker.exists()


def test_wrong_token_peer_connection_reports_connection_lost(server, connect):
    frames, lost = Recorder(), Recorder()
    member0 = server(on_frame=frames)
    connection = connect(member0.port, token="not-the-token", on_connection_lost=lost)
    [(peer, error)] = lost.wait(1)
    assert peer == 0 and "UNAUTHENTICATED" in str(error)
    with pytest.raises(ControlCallError, match="UNAUTHENTICATED"):
        connection.control("ping")
    with pytest.raises(ConnectionError, match="member 0 is closed"):
        connection.send(b"more")
    assert frames.calls == []


def test_garbage_frame_reaches_the_callback_and_decoding_raises(server, connect):
    received, server_lost, client_lost = Recorder(), Recorder(), Recorder()

    def on_frame(peer, frame):
        received(peer, frame)
        decode_chunk(frame)  # raises PacketFormatError: the link is closed

    member0 = server(on_frame=on_frame, on_connection_lost=server_lost)
    connection = connect(member0.port, on_connection_lost=client_lost)
    garbage = b"\x01\x00\x00garbage that is not a packet"
    connection.send(garbage)
    assert received.wait(1) == [(1, garbage)]
    [(peer, error)] = server_lost.wait(1)
    assert peer == 1 and isinstance(error, PacketFormatError)
    [(peer, error)] = client_lost.wait(1)
    assert peer == 0 and isinstance(error, ConnectionError)
    assert member0.link(1) is None


def test_tls_round_trip(server, connect, tls_config):
    frames, back = Recorder(), Recorder()
    member0 = server(tls=tls_config, on_frame=frames, on_control=lambda peer, t, payload: payload[::-1])
    connection = connect(member0.port, tls=tls_config, on_frame=back)
    assert connection.control("echo", b"abc") == b"cba"
    connection.send(b"over tls")
    assert frames.wait(1) == [(1, b"over tls")]
    member0.wait_for_peer(1, WAIT_S).send(b"and back")
    assert back.wait(1) == [(0, b"and back")]


def test_plaintext_client_cannot_talk_to_a_tls_server(server, connect, tls_config):
    member0 = server(tls=tls_config, on_control=Unpickling())
    with pytest.raises(ControlCallError, match="UNAVAILABLE"):
        connect(member0.port).control("echo", b"", timeout_s=2, wait_for_ready=False)


def test_peer_process_echoes_frames_and_its_death_is_reported(peer_processes, connect):
    process, line = peer_processes("serve", TOKEN)
    port = int(line.split()[1])
    echoed, lost = Recorder(), Recorder()
    connection = connect(port, on_frame=echoed, on_connection_lost=lost)
    assert connection.control("echo", b"ping") == b"ping"
    frames = [b"%d" % i * 100 for i in range(500)]
    for frame in frames:
        connection.send(frame)
    assert echoed.wait(len(frames)) == [(0, frame) for frame in frames]
    process.kill()
    killed_at = time.monotonic()
    [(peer, error)] = lost.wait(1, timeout_s=WAIT_S)
    assert peer == 0 and isinstance(error, ConnectionError)
    assert time.monotonic() - killed_at < 5


def test_dialling_peer_process_death_is_reported_at_the_server(server, peer_processes):
    frames, lost = Recorder(), Recorder()
    member0 = server(on_frame=frames, on_connection_lost=lost)
    process, line = peer_processes("dial", f"127.0.0.1:{member0.port}", TOKEN)
    assert line == "READY"
    assert frames.wait(1) == [(5, b"hello")]
    member0.wait_for_peer(5, WAIT_S)
    process.kill()
    killed_at = time.monotonic()
    [(peer, error)] = lost.wait(1)
    assert peer == 5 and time.monotonic() - killed_at < 5
    assert member0.link(5) is None
    with pytest.raises(ConnectionError, match="member 5"):
        member0.send(5, b"x")


def test_authenticated_peer_with_a_broken_message_is_dropped(server):
    frames, lost = Recorder(), Recorder()
    member0 = server(on_frame=frames, on_connection_lost=lost)
    metadata = ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "4"))
    good = b"\x00\x00\x00\x02ok"
    with grpc.insecure_channel(f"127.0.0.1:{member0.port}") as channel:
        stream = channel.stream_stream(STREAM_METHOD)(iter([good + b"\x00\x00\x00\x09short"]), metadata=metadata,
                                                      timeout=WAIT_S)
        with pytest.raises(grpc.RpcError):
            list(stream)
    assert frames.wait(1) == [(4, b"ok")]
    [(peer, error)] = lost.wait(1)
    assert peer == 4 and isinstance(error, PacketFormatError) and "ends inside a frame" in str(error)
