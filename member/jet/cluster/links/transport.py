"""gRPC plumbing of a member: authenticated calls, clients' frame streams, and opening members' links.

No protobuf: the methods carry raw bytes. ``/jet.Member/Control``: one request ``(message type,
payload)`` and one reply, made by clients (members call each other on their links, see
:mod:`jet.cluster.links.stream_calls`). ``/jet.Member/Stream``: a client's (a Spark task's) frame stream,
messages each way, each one or more ``u32 length | frame`` with frames framed by
:mod:`jet.cluster.links.packets`, delivered to ``on_client_frame``. ``/jet.Member/OpenLink``: a member
asks for a link and gets a ticket for the member's link listener; members' frames then travel on
that socket (:mod:`jet.cluster.links.tcp_links`, which says why) and go to ``on_frame``. Every call is
authenticated by :class:`~jet.cluster.links.auth.ClusterAuthInterceptor` before any handler runs, which
also tells a member from a client (:class:`~jet.cluster.links.auth.Caller`); payloads may be
cloudpickled by the caller and are decoded by the handler only, i.e. only after authentication.
One index has at most one live stream or link. Streams, links and clients' control calls are
bounded (:mod:`jet.cluster.links.server_limits`) so members' calls always get a thread.

Either end of a stream or link is a :class:`~jet.cluster.links.frame_link.FrameLink`
(:class:`~jet.cluster.links.grpc_link.GrpcFrameLink` for a stream). A link does not
reconnect itself: a lost connection fails the executions over it, and the member layer
(:mod:`jet.cluster.links.membership`) dials a new link when the peer is back.

**Heartbeats** carry no frame (an empty gRPC message, or a record of length 0 on a link), and
every message refreshes the link's ``last_message_at``. The serving side sends one as soon as it
accepts a stream or link, which tells the dialling side it was accepted
(``FrameLink.established``); :class:`~jet.cluster.links.heartbeat.HeartbeatMonitor` sends the rest and
fails a link silent for too long.
"""

from __future__ import annotations

import logging
import struct
import threading
from concurrent import futures
from typing import Callable, Iterator

import grpc

from jet.cluster.links.auth import Caller, ClusterAuthInterceptor, TlsConfig, call_metadata, caller_of
from jet.cluster.links.errors import LinkError, NotFoundError, RetryLaterError
from jet.cluster.links.frame_link import ConnectionLostCallback, FrameCallback, FrameLink
from jet.cluster.links.grpc_link import GrpcFrameLink, describe_rpc_error
from jet.cluster.links.packets import PacketFormatError
from jet.cluster.links.server_limits import ServerLimits, Slots
from jet.cluster.links.tcp_links import (
    LinkListener,
    TcpLink,
    TicketBook,
    TlsSession,
    decode_link_offer,
    dial_link,
    encode_link_offer,
    send_refusal,
)

STREAM_METHOD = "/jet.Member/Stream"
OPEN_LINK_METHOD = "/jet.Member/OpenLink"
CONTROL_METHOD = "/jet.Member/Control"
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
KEEPALIVE_TIME_MS = 2_000
KEEPALIVE_TIMEOUT_MS = 2_000
DEFAULT_CONTROL_TIMEOUT_S = 10.0
OPEN_LINK_TIMEOUT_S = 10.0

ControlHandler = Callable[[Caller, str, bytes], bytes]

logger = logging.getLogger(__name__)
_TYPE_LENGTH = struct.Struct(">H")
RECONNECT_BACKOFF_MS = 100
MAX_RECONNECT_BACKOFF_MS = 2000
CONNECT_TIMEOUT_MS = 20_000
"""How long one connection attempt may take to finish its HTTP/2 handshake (gRPC's default).
gRPC takes it from ``grpc.min_reconnect_backoff_ms``: set to the 100 ms reconnect backoff, it
made a handshake slower than 100 ms (a loaded machine: Spark's JVM and the members on 2 cores)
fail with "connection attempt timed out before receiving SETTINGS frame"."""


GRPC_WAIT_SLICE_S = 2.0
"""How long a thread blocked in gRPC's sync API sleeps before checking again (gRPC's own is 0.1 s)."""


def relax_grpc_wait_slices(slice_s: float = GRPC_WAIT_SLICE_S) -> None:
    """Make threads blocked in gRPC's sync API wake every ``slice_s`` instead of every 0.1 s.

    gRPC wakes every thread waiting for a message each 0.1 s so that signal handlers run on a
    waiting main thread (grpc/grpc#19464). A member has a reader thread per dialled peer stream,
    so at 16 members those wake-ups were a fifth of an idle member's CPU. Here every waiter is
    notified when its event comes, and on Linux a signal interrupts a lock wait anyway. The
    slice is a private module constant of grpc: when it is not there, nothing changes.
    """
    from grpc import _common

    if isinstance(getattr(_common, "MAXIMUM_WAIT_TIMEOUT", None), float):
        _common.MAXIMUM_WAIT_TIMEOUT = slice_s


relax_grpc_wait_slices()


def _common_options() -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def channel_options() -> list[tuple[str, int]]:
    """Client channel options: large messages, keepalive pings that detect a dead peer in seconds,
    a short reconnect backoff (gRPC's default waits about a second after a refused connect,
    which is most of a local cluster's start-up) and gRPC's own connect timeout."""
    return _common_options() + [
        ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
        ("grpc.min_reconnect_backoff_ms", CONNECT_TIMEOUT_MS),  # gRPC's name for the connect timeout
        ("grpc.max_reconnect_backoff_ms", MAX_RECONNECT_BACKOFF_MS),
    ]


def server_options() -> list[tuple[str, int]]:
    """Server options matching :func:`channel_options` (accept the clients' frequent pings)."""
    return _common_options() + [
        ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
        ("grpc.http2.max_ping_strikes", 0),
        ("grpc.so_reuseport", 0),
    ]


def encode_control_request(msg_type: str, payload: bytes) -> bytes:
    """``u16 length | message type (UTF-8) | payload``."""
    name = msg_type.encode("utf-8")
    if not name or len(name) > 0xFFFF:
        raise ValueError(f"control message type must be 1..65535 UTF-8 bytes, got {msg_type!r}")
    return _TYPE_LENGTH.pack(len(name)) + name + payload


def decode_control_request(request: bytes) -> tuple[str, bytes]:
    """Inverse of :func:`encode_control_request`; raises :class:`PacketFormatError` when malformed."""
    if len(request) < _TYPE_LENGTH.size:
        raise PacketFormatError(f"control request of {len(request)} bytes has no message type")
    (length,) = _TYPE_LENGTH.unpack_from(request)
    end = _TYPE_LENGTH.size + length
    if length == 0 or end > len(request):
        raise PacketFormatError(f"control request message type of {length} bytes does not fit "
                                f"in {len(request)} bytes")
    try:
        return request[_TYPE_LENGTH.size:end].decode("utf-8"), request[end:]
    except UnicodeDecodeError as e:
        raise PacketFormatError(f"control request message type is not UTF-8: {e}") from e


class ControlCallError(Exception):
    """A control call failed: the peer's handler raised, the deadline passed, or the peer is gone."""

    def __init__(self, peer_index: int, msg_type: str, code: grpc.StatusCode, details: str | None) -> None:
        super().__init__(f"control call {msg_type!r} to member {peer_index} failed: {code.name}: {details}")
        self.peer_index = peer_index
        self.msg_type = msg_type
        self.code = code
        self.details = details


class MemberServer:
    """The gRPC server of one member: accepts frame streams and control calls.

    ``on_frame`` (members' streams), ``on_client_frame`` (clients' streams; without it they are
    refused), ``on_control``, ``on_peer_connected``, ``on_peer_lost`` and ``on_connection_lost`` may
    be given here or assigned before :meth:`start`. ``on_peer_lost(link, error)``, when set, is
    called instead of ``on_connection_lost`` when a member's stream ends, naming the very link (a
    member that rejoins has had several). ``on_control(caller, msg_type, payload) -> reply`` runs on a
    server thread; ``PermissionError`` in it fails the call with ``PERMISSION_DENIED``, any other
    exception with ``INTERNAL``, each naming the exception. ``member_key=None`` refuses every
    caller claiming a member index; ``member_count`` (when known) refuses indexes outside the cluster.
    """

    def __init__(self, port: int, token: str, tls: TlsConfig | None = None, *, host: str = "[::]",
                 member_key: str | None = None, member_count: int | None = None,
                 on_frame: FrameCallback | None = None, on_client_frame: FrameCallback | None = None,
                 on_control: ControlHandler | None = None,
                 on_peer_connected: Callable[[FrameLink], None] | None = None,
                 on_peer_lost: Callable[[FrameLink, BaseException], None] | None = None,
                 on_connection_lost: ConnectionLostCallback | None = None,
                 limits: ServerLimits = ServerLimits(), link_port: int = 0) -> None:
        self.on_frame = on_frame
        self.on_client_frame = on_client_frame
        self.on_control = on_control
        self.on_peer_connected = on_peer_connected
        self.on_peer_lost = on_peer_lost
        self.on_connection_lost = on_connection_lost
        self.limits = limits
        self._links: dict[int, FrameLink] = {}
        self._links_changed = threading.Condition()
        self._accepting_members = True
        self._member_streams = Slots(limits.member_streams)
        self._client_streams = Slots(limits.client_streams)
        self._client_calls = Slots(limits.client_calls)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=limits.threads, thread_name_prefix="jet-grpc"),
            handlers=[grpc.method_handlers_generic_handler("jet.Member", {
                "Stream": grpc.stream_stream_rpc_method_handler(self._stream),
                "OpenLink": grpc.unary_unary_rpc_method_handler(self._open_link),
                "Control": grpc.unary_unary_rpc_method_handler(self._control),
            })],
            interceptors=[ClusterAuthInterceptor(token, lambda method: method == STREAM_METHOD,
                                                 member_key, member_count)],
            options=server_options(),
        )
        address = f"{host}:{port}"
        self.port = (self._server.add_secure_port(address, tls.server_credentials()) if tls
                     else self._server.add_insecure_port(address))
        if self.port == 0:
            raise OSError(f"cannot bind the member server to {address}")
        self._tickets = TicketBook()
        self._link_listener = LinkListener(host, link_port, tls.server_ssl_context() if tls else None,
                                           self._link_arrived)
        """Members' links (:mod:`jet.cluster.links.tcp_links`), opened with a ticket from ``OpenLink``."""

    def start(self) -> "MemberServer":
        self._server.start()
        self._link_listener.start()
        return self

    def stop_accepting_members(self) -> None:
        """Refuse members' new streams from now on (UNAVAILABLE): this member is stopping."""
        self._accepting_members = False

    def stop(self, grace_s: float | None = None) -> None:
        """Stop serving; open links are closed without ``on_connection_lost``."""
        with self._links_changed:
            links = list(self._links.values())
        self._link_listener.stop()
        for link in links:
            link.close()
        self._tickets.close()
        self._server.stop(grace_s).wait()

    def link(self, peer_index: int) -> FrameLink | None:
        """The open stream from ``peer_index``, if any."""
        with self._links_changed:
            link = self._links.get(peer_index)
        return None if link is None or link.closed else link

    def open_streams(self, members: bool) -> int:
        """How many streams of members (or of clients) are being served now."""
        return (self._member_streams if members else self._client_streams).in_use

    def wait_for_peer(self, peer_index: int, timeout_s: float) -> FrameLink:
        """Wait until ``peer_index`` has opened its stream; ``TimeoutError`` naming it otherwise."""
        with self._links_changed:
            if not self._links_changed.wait_for(lambda: peer_index in self._links, timeout_s):
                raise TimeoutError(f"member {peer_index} did not open its stream within {timeout_s} s")
            return self._links[peer_index]

    def send(self, peer_index: int, frame: bytes) -> None:
        """Send a frame back to a peer over the stream it opened."""
        link = self.link(peer_index)
        if link is None:
            raise LinkError(f"member {peer_index} has no open stream to this member")
        link.send(frame)

    def _stream(self, request_iterator: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        """A client's frame stream (members link over TCP: :meth:`_open_link`)."""
        caller = caller_of(context)
        if caller.is_member:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"{caller} must open its link with {OPEN_LINK_METHOD}, not a gRPC stream")
        if self.on_client_frame is None:
            logger.warning("refused a stream from %s: this member serves no client streams", caller)
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"this member serves no client streams; {caller}'s stream is refused")
        give_back = self._slot(self._client_streams, caller, "client", context)
        link = GrpcFrameLink(caller.index, self.on_client_frame, lambda index, error: self._lost(link, error))
        link.bind(context.cancel, lambda code, details: (context.set_code(code), context.set_details(details)))
        if not self._register(link):
            give_back()
            context.abort(grpc.StatusCode.ALREADY_EXISTS, _refuse_second_stream(caller))

        def terminated() -> None:
            link.fail(LinkError(f"stream from member {caller.index} terminated"))
            give_back()

        if not context.add_callback(terminated):
            terminated()
            return iter(())
        link.send_heartbeat()  # the first message: tells the dialling side its stream was accepted
        link.start_reader(request_iterator, f"jet-recv-{caller.index}")
        return _giving_back(link.outgoing_messages(), give_back)

    def _open_link(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        """A member asks to link: refused as its stream used to be, or the listener's port and a ticket."""
        caller = caller_of(context)
        if not caller.is_member:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"only members open links, not {caller}")
        if not self._accepting_members:
            context.abort(grpc.StatusCode.UNAVAILABLE, "this member is stopping")
        give_back = self._slot(self._member_streams, caller, "member", context)
        if self.link(caller.index) is not None:
            give_back()
            context.abort(grpc.StatusCode.ALREADY_EXISTS, _refuse_second_stream(caller))
        return encode_link_offer(self._link_listener.port, self._tickets.issue(caller.index, give_back))

    def _link_arrived(self, sock, tls: TlsSession | None, ticket: bytes, received: bytes, address: str) -> None:
        """A connection with a ticket came to the link listener: it becomes that member's link."""
        redeemed = self._tickets.redeem(ticket)
        if redeemed is None:
            logger.warning("refused a link connection from %s: its ticket is unknown or expired", address)
            send_refusal(sock, tls, "UNAUTHENTICATED: the ticket is unknown or expired")
            return
        peer, give_back = redeemed
        threading.current_thread().name = f"jet-recv-{peer}"  # this thread reads the link
        link = TcpLink(peer, self.on_frame, lambda index, error: self._lost(link, error), on_end=give_back)
        if not self._register(link):
            give_back()
            send_refusal(sock, tls, f"ALREADY_EXISTS: {_refuse_second_stream(Caller(peer))}")
            return
        link.send_heartbeat()  # the first message: tells the dialling side its link was taken
        if self.on_peer_connected is not None:
            self.on_peer_connected(link)
        link.attach(sock, tls, received)

    def _slot(self, slots: Slots, caller: Caller, kind: str, context: grpc.ServicerContext) -> Callable[[], None]:
        """One of ``slots`` for ``caller``'s stream, or the call ends with ``RESOURCE_EXHAUSTED``."""
        give_back = slots.take()
        if give_back is None:
            logger.warning("refused a stream from %s: already serving %d %s streams", caller, slots.limit, kind)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"this member already serves its limit of {slots.limit} {kind} streams; try later")
        return give_back

    def _register(self, link: FrameLink) -> bool:
        """Make ``link`` the live one of its index; False when that index has a live one already."""
        with self._links_changed:
            live = self._links.get(link.peer_index)
            if live is not None and not live.closed:
                return False
            self._links[link.peer_index] = link
            self._links_changed.notify_all()
            return True

    def _lost(self, link: FrameLink, error: BaseException) -> None:
        with self._links_changed:
            if self._links.get(link.peer_index) is link:
                del self._links[link.peer_index]
        if self.on_peer_lost is not None and link.peer_index >= 0:
            self.on_peer_lost(link, error)
        elif self.on_connection_lost is not None:
            self.on_connection_lost(link.peer_index, error)

    def _control(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        caller = caller_of(context)
        give_back = (lambda: None) if caller.is_member else self._client_calls.take()
        if give_back is None:
            logger.warning("refused a control call of %s: already serving %d client calls",
                           caller, self._client_calls.limit)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"this member already serves its limit of "
                          f"{self._client_calls.limit} control calls of clients; try later")
        try:
            code, details = self._serve_control(caller, request)
        finally:
            give_back()
        if code is None:
            return details
        context.abort(code, details)

    def _serve_control(self, caller: Caller, request: bytes) -> tuple[grpc.StatusCode | None, bytes | str]:
        if self.on_control is None:
            return grpc.StatusCode.UNIMPLEMENTED, "this member has no control handler"
        return serve_control(self.on_control, caller, request)


def _refuse_second_stream(caller: Caller) -> str:
    """Logs the refusal of a second stream for a live index; what the refused caller is told."""
    logger.warning("refused a second stream from %s: its first stream is live and stays", caller)
    return f"{caller} already has a live stream to this member; a second one is refused"


def serve_control(on_control: ControlHandler, caller: Caller,
                  request: bytes) -> tuple[grpc.StatusCode | None, bytes | str]:
    """Answer one control request: ``(None, reply)``, or the status code and details the call
    fails with: a malformed request (``PacketFormatError``: a field missing or of the wrong
    type, an unknown message) is ``INVALID_ARGUMENT`` and a request for something this member
    does not have (``NotFoundError``) ``NOT_FOUND``, both logged at INFO; a handler's
    ``PermissionError`` is ``PERMISSION_DENIED``, logged at WARNING; any other exception
    ``INTERNAL``, logged with its traceback."""
    try:
        msg_type, payload = decode_control_request(request)
    except PacketFormatError as e:
        return grpc.StatusCode.INVALID_ARGUMENT, str(e)
    try:
        return None, on_control(caller, msg_type, payload)
    except (PacketFormatError, NotFoundError, RetryLaterError) as e:  # the request's fault, or not yet
        logger.info("control call %r of %s refused: %s", msg_type, caller, e)
        return _REFUSAL_CODES[next(kind for kind in _REFUSAL_CODES if isinstance(e, kind))], f"{type(e).__name__}: {e}"
    except PermissionError as e:
        logger.warning("refused control call %r of %s: %s", msg_type, caller, e)
        return grpc.StatusCode.PERMISSION_DENIED, f"{type(e).__name__}: {e}"
    except Exception as e:
        logger.exception("control call %r from %s failed", msg_type, caller)
        return grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}"


_REFUSAL_CODES = {PacketFormatError: grpc.StatusCode.INVALID_ARGUMENT, NotFoundError: grpc.StatusCode.NOT_FOUND,
                  RetryLaterError: grpc.StatusCode.UNAVAILABLE}


def _giving_back(messages: Iterator[bytes], give_back: Callable[[], None]) -> Iterator[bytes]:
    """``messages``, then the stream's slot is given back (as soon as its thread is free)."""
    try:
        yield from messages
    finally:
        give_back()


class PeerConnection:
    """The dialling side: opens the frame stream to one peer member and makes control calls to it.

    The stream is opened at construction (a member's link: asked for with ``OpenLink`` and carried
    by a thread of its own); frames sent before the peer answers are queued. A broken stream (peer
    died, wrong token, refused) calls ``on_connection_lost`` once. With
    ``open_stream=False`` only control calls are made (a client, or the higher-index member of a
    pair calling the lower one, whose stream the lower one dialled); ``link`` is ``None`` then.
    A member (``self_index >= 0``) proves its index with ``member_key``; a client (negative
    ``self_index``) has none.
    """

    def __init__(self, address: str, self_index: int, peer_index: int, token: str,
                 tls: TlsConfig | None = None, *, member_key: str | None = None,
                 on_frame: FrameCallback | None = None,
                 on_connection_lost: ConnectionLostCallback | None = None,
                 open_stream: bool = True) -> None:
        self.address = address
        self.peer_index = peer_index
        self._metadata = call_metadata(token, self_index, member_key)
        options = channel_options() + (tls.channel_options() if tls else [])
        self._channel = (grpc.secure_channel(address, tls.channel_credentials(), options=options) if tls
                         else grpc.insecure_channel(address, options=options))
        self._control_stub = self._channel.unary_unary(CONTROL_METHOD)
        self.link: FrameLink | None = None
        if not open_stream:
            return
        if self_index >= 0:  # a member links over TCP
            self.link = TcpLink(peer_index, on_frame, on_connection_lost)
            threading.Thread(target=self._open_link, args=(self.link, tls), name=f"jet-recv-{peer_index}",
                             daemon=True).start()
            return
        link = self.link = GrpcFrameLink(peer_index, on_frame, on_connection_lost)
        call = self._channel.stream_stream(STREAM_METHOD)(link.outgoing_messages(), metadata=self._metadata)
        link.bind(call.cancel)
        link.start_reader(call, f"jet-recv-{peer_index}")

    def _open_link(self, link: TcpLink, tls: TlsConfig | None) -> None:
        """Ask the peer for a ticket, connect, and carry ``link`` (as its reader) until it ends."""
        host = self.address.rsplit(":", 1)[0].strip("[]")
        try:
            offer = self._channel.unary_unary(OPEN_LINK_METHOD)(b"", timeout=OPEN_LINK_TIMEOUT_S,
                                                                metadata=self._metadata, wait_for_ready=True)
            port, ticket = decode_link_offer(offer)
            dial_link(link, host, port, ticket, tls.client_ssl_context() if tls else None,
                      tls.server_name if tls else None)
        except grpc.RpcError as e:
            link.fail(LinkError(f"stream with member {self.peer_index} broke: {describe_rpc_error(e)}"))
        except (OSError, ValueError, PacketFormatError) as e:
            link.fail(LinkError(f"could not link to member {self.peer_index} at {host}: {e}"))

    def send(self, frame: bytes) -> None:
        """Queue one frame for the peer; raises ``ConnectionError`` once the stream is closed."""
        if self.link is None:
            raise LinkError(f"no stream to member {self.peer_index} was opened (control calls only)")
        self.link.send(frame)

    def control(self, msg_type: str, payload: bytes = b"", timeout_s: float = DEFAULT_CONTROL_TIMEOUT_S,
                wait_for_ready: bool = True) -> bytes:
        """One control call with a deadline; raises :class:`ControlCallError` on any failure."""
        try:
            return self._control_stub(encode_control_request(msg_type, payload), timeout=timeout_s,
                                      metadata=self._metadata, wait_for_ready=wait_for_ready)
        except grpc.RpcError as e:
            raise ControlCallError(self.peer_index, msg_type, e.code(), e.details()) from e

    def close(self) -> None:
        """Close the stream and the channel (no ``on_connection_lost``)."""
        if self.link is not None:
            self.link.close()
        self._channel.close()
