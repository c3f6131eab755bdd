"""The gRPC transport, with real servers on loopback in this process and in peer processes."""

import pathlib
import pickle
import socket
import struct
import threading
import time

import cloudpickle
import grpc
import pytest
from jet.cluster.edges.chunk_packets import decode_chunk
from jet.cluster.links.auth import MEMBER_METADATA_KEY, MEMBER_PROOF_METADATA_KEY, TOKEN_METADATA_KEY, member_proof
from jet.cluster.links.packets import PacketFormatError
from jet.cluster.links.server_limits import ServerLimits
from jet.cluster.links.tcp_links import LinkListener, TicketBook, TlsSession, decode_link_offer
from jet.cluster.links.transport import (
    CONTROL_METHOD,
    OPEN_LINK_METHOD,
    STREAM_METHOD,
    ControlCallError,
    MemberServer,
    PeerConnection,
    decode_control_request,
    encode_control_request,
)
from jet.cluster.local.local_cluster import free_ports

TOKEN = "s3cret-cluster-token"
MEMBER_KEY = "s3cret-member-key"
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

    def __call__(self, caller, msg_type, payload):
        self.calls.append((caller.index, msg_type))
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
        kwargs.setdefault("member_key", MEMBER_KEY)
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
        kwargs.setdefault("member_key", MEMBER_KEY if kwargs["self_index"] >= 0 else None)
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

    def handle(caller, msg_type, payload):
        if msg_type == "fail":
            raise ValueError("vertex 'map' has no supplier")
        if msg_type == "refuse":
            raise PermissionError(f"{msg_type!r} is not for {caller}")
        if msg_type == "block":
            release.wait(WAIT_S)
        return cloudpickle.dumps((caller.index, msg_type, cloudpickle.loads(payload)))

    member0 = server(on_control=handle)
    connection = connect(member0.port, self_index=2)
    function = lambda x: x * 2  # noqa: E731 - travels with cloudpickle
    peer, msg_type, back = cloudpickle.loads(connection.control("init", cloudpickle.dumps(function)))
    assert (peer, msg_type, back(21)) == (2, "init", 42)
    with pytest.raises(ControlCallError, match="INTERNAL.*ValueError: vertex 'map' has no supplier") as failed:
        connection.control("fail", cloudpickle.dumps(None))
    assert failed.value.code is grpc.StatusCode.INTERNAL and failed.value.msg_type == "fail"
    with pytest.raises(ControlCallError, match="PERMISSION_DENIED.*'refuse' is not for member 2") as refused:
        connection.control("refuse", cloudpickle.dumps(None))
    assert refused.value.code is grpc.StatusCode.PERMISSION_DENIED
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
    ((TOKEN_METADATA_KEY, "wrong-token"), (MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof(MEMBER_KEY, 1))),
    ((MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof(MEMBER_KEY, 1))),
    ((TOKEN_METADATA_KEY, TOKEN[:-1]), (MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof(MEMBER_KEY, 1))),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "not-a-number")),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "--1")),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "1")),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof("guess", 1))),
    ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "1"), (MEMBER_PROOF_METADATA_KEY, member_proof(MEMBER_KEY, 2))),
], ids=["wrong", "missing", "prefix", "bad-member-index", "double-minus", "member-without-proof",
        "proof-of-another-key", "proof-of-another-member"])
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
        with pytest.raises(grpc.RpcError) as rejected:
            channel.unary_unary(OPEN_LINK_METHOD)(b"", metadata=metadata, timeout=WAIT_S)
        assert rejected.value.code() is grpc.StatusCode.UNAUTHENTICATED
        stream = channel.stream_stream(STREAM_METHOD)(iter([payload, b"\x01garbage"]), metadata=metadata,
                                                      timeout=WAIT_S)
        with pytest.raises(grpc.RpcError) as rejected:
            list(stream)
        assert rejected.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert control.calls == [] and frames.calls == []
    assert not marker.exists()
    assert member0.link(1) is None


def test_a_member_claim_needs_the_proof_of_that_index(server, connect, caplog):
    lost = Recorder()
    member0 = server(on_frame=Recorder(), on_control=lambda caller, t, payload: b"ok")
    impostor = connect(member0.port, self_index=0, member_key="not-the-member-key", on_connection_lost=lost)
    with pytest.raises(ControlCallError, match="UNAUTHENTICATED.*claims member 0 with a wrong member proof"):
        impostor.control("init")
    assert "UNAUTHENTICATED" in str(lost.wait(1)[0][1])
    assert "claims member 0 with a wrong member proof" in caplog.text
    assert connect(member0.port, self_index=0).control("init") == b"ok"


def test_a_server_with_a_member_count_refuses_indexes_outside_the_cluster(server, connect):
    member0 = server(member_count=2, on_control=lambda caller, t, payload: b"ok")
    assert connect(member0.port, self_index=1).control("ping") == b"ok"
    with pytest.raises(ControlCallError, match="claims member 2, but the cluster has members 0..1"):
        connect(member0.port, self_index=2).control("ping")


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


def test_a_tls_link_carries_large_frames_both_ways_in_order(server, connect, tls_config):
    frames, back = Recorder(), Recorder()
    member0 = server(tls=tls_config, on_frame=frames)
    connection = connect(member0.port, tls=tls_config, on_frame=back)
    sent = [bytes([i % 251]) * (64 * 1024 + i) for i in range(40)]
    for frame in sent:
        connection.send(frame)
    link = member0.wait_for_peer(1, WAIT_S)
    for frame in sent:
        link.send(frame[::-1])
    assert frames.wait(len(sent)) == [(1, frame) for frame in sent]
    assert back.wait(len(sent)) == [(0, frame[::-1]) for frame in sent]


class WritesHeldUntilRead:
    """A socket whose writes wait until it next reads: after a TLS handshake it still holds the
    handshake's last message, which then goes out in one write with what follows."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.held = sock, b""

    def sendall(self, data: bytes) -> None:
        self.held += data

    def recv(self, size: int) -> bytes:
        self.sock.sendall(self.take())
        return self.sock.recv(size)

    def take(self) -> bytes:
        held, self.held = self.held, b""
        return held


def test_a_ticket_sent_with_the_last_tls_handshake_message_is_read_at_once(tls_config):
    # A dialler sends its ticket right after its handshake: the listener's last handshake read
    # can take the ticket with it. It must come out of TLS's buffer, not wait for more bytes.
    arrived = Recorder()

    def greeted(sock, tls, ticket, received, address):
        arrived(ticket, received)
        sock.close()

    listener = LinkListener("127.0.0.1", 0, tls_config.server_ssl_context(), greeted).start()
    sock = socket.create_connection(("127.0.0.1", listener.port), timeout=WAIT_S)
    try:
        held = WritesHeldUntilRead(sock)
        session = TlsSession(tls_config.client_ssl_context(), server_side=False, server_hostname="localhost")
        session.handshake(held)
        assert held.held, "the handshake's last message is held back"
        ticket = bytes(range(32))
        sock.sendall(held.take() + session.encrypt(ticket + b"\x00\x00\x00\x02ok"))  # that message, the ticket, a frame
        assert arrived.wait(1, timeout_s=5) == [(ticket, b"\x00\x00\x00\x02ok")]
    finally:
        sock.close()
        listener.stop()


def test_a_tls_members_link_listener_refuses_a_connection_in_clear(server, tls_config, caplog):
    frames = Recorder()
    member0 = server(tls=tls_config, on_frame=frames)
    with grpc.secure_channel(f"localhost:{member0.port}", tls_config.channel_credentials()) as channel:
        offer = channel.unary_unary(OPEN_LINK_METHOD)(b"", metadata=member_metadata(2), timeout=WAIT_S)
    link_port, ticket = decode_link_offer(offer)
    sock = socket.create_connection(("127.0.0.1", link_port), timeout=WAIT_S)
    sock.sendall(ticket + b"\x00\x00\x00\x02ok")
    assert sock.recv(4096) == b"", "closed after a failed TLS handshake"
    sock.close()
    assert frames.calls == [] and member0.link(2) is None
    assert "refused a link connection from 127.0.0.1" in caplog.text


def test_plaintext_client_cannot_talk_to_a_tls_server(server, connect, tls_config):
    member0 = server(tls=tls_config, on_control=Unpickling())
    with pytest.raises(ControlCallError, match="UNAVAILABLE"):
        connect(member0.port).control("echo", b"", timeout_s=2, wait_for_ready=False)


def test_peer_process_echoes_frames_and_its_death_is_reported(peer_processes, connect):
    process, line = peer_processes("serve", TOKEN, MEMBER_KEY)
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
    process, line = peer_processes("dial", f"127.0.0.1:{member0.port}", TOKEN, MEMBER_KEY)
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


def member_metadata(index: int) -> tuple:
    return ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, str(index)),
            (MEMBER_PROOF_METADATA_KEY, member_proof(MEMBER_KEY, index)))


def link_offer(port: int, metadata: tuple) -> tuple[int, bytes]:
    """(link port, ticket) that the server at ``port`` gives the caller of OpenLink."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return decode_link_offer(channel.unary_unary(OPEN_LINK_METHOD)(b"", metadata=metadata, timeout=WAIT_S))


def raw_link(port: int, index: int, ticket: bytes | None = None) -> socket.socket:
    """A socket to the link listener of the server at ``port``, its ticket (the one OpenLink gave
    member ``index``, unless given) sent."""
    link_port, issued = link_offer(port, member_metadata(index))
    sock = socket.create_connection(("127.0.0.1", link_port), timeout=WAIT_S)
    sock.sendall(issued if ticket is None else ticket)
    return sock


def test_authenticated_peer_with_a_broken_message_is_dropped(server):
    frames, lost = Recorder(), Recorder()
    member0 = server(on_frame=frames, on_connection_lost=lost)
    sock = raw_link(member0.port, 4)
    sock.sendall(b"\x00\x00\x00\x02ok" + b"\x00\x00\x00\x09short")
    sock.shutdown(socket.SHUT_WR)
    assert frames.wait(1) == [(4, b"ok")]
    [(peer, error)] = lost.wait(1)
    assert peer == 4 and isinstance(error, PacketFormatError) and "ends inside a frame" in str(error)
    sock.close()


@pytest.mark.parametrize("record, message", [
    (struct.pack(">I", (1 << 28) + 1), "sent a record of 268435457 bytes"),
    (struct.pack(">II", 0xFFFFFFFF, (1 << 28) + 1), "sent a reason of 268435457 bytes"),
])
def test_a_link_record_claiming_more_than_the_limit_drops_the_peer_before_it_is_buffered(server, record, message):
    frames, lost = Recorder(), Recorder()
    member0 = server(on_frame=frames, on_connection_lost=lost)
    sock = raw_link(member0.port, 4)
    sock.sendall(b"\x00\x00\x00\x02ok" + record)
    assert frames.wait(1) == [(4, b"ok")]
    [(peer, error)] = lost.wait(1)
    assert peer == 4 and isinstance(error, PacketFormatError) and message in str(error)
    sock.close()


def test_a_link_connection_without_a_good_ticket_is_refused_before_anything_it_sent_is_read(server, tmp_path):
    marker = tmp_path / "unpickled"
    frames = Recorder()
    member0 = server(on_frame=frames, on_control=Unpickling())
    payload = pickle.dumps(TouchFile(marker))
    record = len(payload).to_bytes(4, "big") + payload
    link_port, ticket = link_offer(member0.port, member_metadata(2))

    def attempt(sent: bytes, half_close: bool = False) -> tuple[socket.socket, bytes]:
        sock = socket.create_connection(("127.0.0.1", link_port), timeout=WAIT_S)
        sock.sendall(sent)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return sock, sock.recv(4096)

    forged, answer = attempt(bytes(b ^ 1 for b in ticket) + record)
    assert b"UNAUTHENTICATED: the ticket is unknown or expired" in answer
    short, answer = attempt(b"short", half_close=True)
    assert answer == b"", "closed: it never sent a ticket"
    good, answer = attempt(ticket + record)
    assert answer == b"\x00\x00\x00\x00", "the first message on a taken link is a heartbeat"
    assert frames.wait(1) == [(2, payload)]
    again, answer = attempt(ticket + record)
    assert b"unknown or expired" in answer, "a ticket is good once"
    for sock in (forged, short, good, again):
        sock.close()
    assert frames.calls == [(2, payload)], "only the link with the good ticket"
    assert not marker.exists(), "nothing is unpickled on the link layer"


def test_members_links_listen_on_the_given_port(server, connect):
    [link_port] = free_ports(1)
    frames = Recorder()
    member0 = server(on_frame=frames, link_port=link_port)
    assert link_offer(member0.port, member_metadata(1))[0] == link_port
    connect(member0.port, self_index=2).send(b"over the given port")
    assert frames.wait(1) == [(2, b"over the given port")]


def test_open_link_is_for_members_and_a_members_grpc_stream_is_refused(server):
    member0 = server(on_frame=Recorder(), on_client_frame=Recorder())
    with pytest.raises(grpc.RpcError) as refused:
        link_offer(member0.port, ((TOKEN_METADATA_KEY, TOKEN), (MEMBER_METADATA_KEY, "-3")))
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED and "only members" in refused.value.details()
    with grpc.insecure_channel(f"127.0.0.1:{member0.port}") as channel:
        stream = channel.stream_stream(STREAM_METHOD)(iter([b"\x00\x00\x00\x02ok"]), metadata=member_metadata(1),
                                                      timeout=WAIT_S)
        with pytest.raises(grpc.RpcError) as refused:
            list(stream)
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED and OPEN_LINK_METHOD in refused.value.details()


def test_an_unused_ticket_expires_and_gives_its_member_link_slot_back():
    clock = [0.0]
    given_back = []
    book = TicketBook(ttl_s=5, clock=lambda: clock[0])
    ticket = book.issue(3, lambda: given_back.append(3))
    kept = book.issue(4, lambda: given_back.append(4))
    clock[0] = 4.9
    assert book.redeem(kept)[0] == 4 and given_back == []
    clock[0] = 5.1
    assert book.redeem(ticket) is None and given_back == [3]


def test_a_second_stream_claiming_a_live_index_is_refused_and_the_first_keeps_working(server, connect, caplog):
    frames, back, second_lost = Recorder(), Recorder(), Recorder()
    member0 = server(on_frame=frames)
    first = connect(member0.port, self_index=3, on_frame=back)
    first.send(b"from the first")
    assert frames.wait(1) == [(3, b"from the first")]
    second = connect(member0.port, self_index=3, on_connection_lost=second_lost)
    try:
        second.send(b"from the second")
    except ConnectionError:
        pass  # the refusal can close the second stream before it sends anything
    [(peer, error)] = second_lost.wait(1)
    assert "ALREADY_EXISTS" in str(error) and "member 3 already has a live stream" in str(error)
    assert "refused a second stream from member 3" in caplog.text
    first.send(b"still the first")
    assert frames.wait(2) == [(3, b"from the first"), (3, b"still the first")]
    member0.send(3, b"back to the first")
    assert back.wait(1) == [(0, b"back to the first")]


def test_client_streams_go_to_their_own_handler_and_are_refused_without_one(server, connect):
    member_frames, client_frames, lost = Recorder(), Recorder(), Recorder()
    member0 = server(on_frame=member_frames, on_client_frame=client_frames)
    connect(member0.port, self_index=-17).send(b"from a client")
    assert client_frames.wait(1) == [(-17, b"from a client")]
    assert member_frames.calls == []
    members_only = server(on_frame=member_frames)
    link = connect(members_only.port, self_index=-18, on_connection_lost=lost)
    try:
        link.send(b"refused")
    except ConnectionError:
        pass  # the server refused the stream before this frame went out
    [(peer, error)] = lost.wait(1)
    assert "PERMISSION_DENIED" in str(error) and "serves no client streams" in str(error)


def test_a_stream_handler_refusal_reaches_the_peer_as_its_status(server, connect):
    def refuse(peer, frame):
        raise PermissionError(f"a client (index {peer}) sent a CHUNK frame")

    lost = Recorder()
    member0 = server(on_client_frame=refuse)
    connect(member0.port, self_index=-5, on_connection_lost=lost).send(b"\x03chunk")
    [(peer, error)] = lost.wait(1)
    assert "PERMISSION_DENIED" in str(error) and "sent a CHUNK frame" in str(error)


def test_streams_beyond_their_limit_are_refused_and_members_still_get_threads(server, connect):
    release = threading.Event()

    def handle(caller, msg_type, payload):
        if msg_type == "block":
            release.wait(WAIT_S)
        return b"ok"

    limits = ServerLimits(client_streams=2, client_calls=1, member_streams=1, member_call_threads=1)
    member0 = server(on_frame=Recorder(), on_client_frame=Recorder(), on_control=handle, limits=limits)
    assert limits.threads == 4, "members' links hold no gRPC thread"
    lost = Recorder()
    for index in range(8):  # more streams than the server has threads
        connect(member0.port, self_index=-1 - index, on_connection_lost=lost)
    refused = lost.wait(6)
    assert all("RESOURCE_EXHAUSTED" in str(error) for _, error in refused)
    assert member0.open_streams(members=False) == 2
    blocking = threading.Thread(target=connect(member0.port, self_index=-100).control, args=("block",))
    blocking.start()
    try:
        wait_until_true(lambda: member0._client_calls.in_use == 1)
        with pytest.raises(ControlCallError, match="RESOURCE_EXHAUSTED.*control calls of clients"):
            connect(member0.port, self_index=-101).control("status")
        member = connect(member0.port, self_index=1)
        assert member.control("init") == b"ok"  # a member's control call always gets a thread
        wait_until_true(lambda: member0.open_streams(members=True) == 1)  # its link opens meanwhile
    finally:
        release.set()
        blocking.join()
    assert connect(member0.port, self_index=-102).control("status") == b"ok"


def wait_until_true(condition, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"still false after {timeout_s} s"
        time.sleep(0.01)
