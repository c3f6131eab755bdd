"""Members' frame links on plain TCP sockets, opened with a ticket from an authenticated gRPC call.

A message on a gRPC stream costs about 110-130 us of CPU on each side (gRPC's threads and event
engine), a message on a socket with a reader thread 11-32 us (``bench/grpc_message_cost_bench.py``),
and members exchange many small messages: calls, relay frames, heartbeats, a short job's frames.
So members keep gRPC for authentication, control calls and clients, and carry their frames here.

Opening a link (the lower index dials the higher one, as :mod:`jet.cluster.links.membership` says):

1. the dialling member calls ``/jet.Member/OpenLink`` on the peer's gRPC server. The auth
   interceptor checks the member's proof as for any call. The server refuses as it refused a
   member's stream (``UNAVAILABLE`` while stopping, ``RESOURCE_EXHAUSTED`` past its limit of
   member links, ``ALREADY_EXISTS`` while that index has a live link), or answers with the port of
   its link listener and a **ticket**: 32 random bytes, good once, for that member index, for
   :data:`TICKET_TTL_S`;
2. the dialler connects to that port on the same host, runs TLS over the connection when the
   cluster has TLS (the same certificates as gRPC), and sends the ticket;
3. the server redeems it. An unknown or expired ticket closes the connection: nothing past a
   connection's first 32 bytes is read, let alone unpickled, before it proved who it is. The
   link is then that member's, and the server's first message is a heartbeat, which tells the
   dialler its link was taken (``established``).

On the wire a link carries records ``u32 length | frame``. Length 0 is a heartbeat, and the
length ``0xFFFFFFFF`` is followed by ``u32 n | n bytes of UTF-8``: the reason the sender ends the
link (it refused a frame, or the link). Each link has a reader thread (``on_frame`` runs there,
in order) and a writer thread that takes everything queued at once into one ``sendall``, so
``send`` never blocks a tasklet. While the writer of a plaintext link has nothing to do, ``send``
writes the frame itself with a non-blocking ``send`` (what the socket does not take at once
goes to the writer, first in its queue): one syscall instead of a thread hand-over. With TLS
both threads use one :class:`ssl.SSLObject` over memory buffers, taking turns under a lock (an
SSL object must not be used by two threads at once), and only the writer thread writes to the
socket.
"""

from __future__ import annotations

import logging
import secrets
import socket
import ssl
import struct
import threading
import time
from typing import Callable

from jet.cluster.links.errors import LinkError
from jet.cluster.links.frame_link import (
    CLOSE,
    FRAME_LENGTH,
    HEARTBEAT,
    ConnectionLostCallback,
    FrameCallback,
    FrameLink,
    no_frame_handler,
)
from jet.cluster.links.packets import PacketFormatError

logger = logging.getLogger(__name__)

TICKET_BYTES = 32
TICKET_TTL_S = 30.0
"""How long a ticket stays good after the OpenLink call that issued it."""
HANDSHAKE_TIMEOUT_S = 10.0
"""How long a new connection may take for its TLS handshake and its ticket, in all."""
MAX_GREETINGS = 64
"""Connections that have not shown a ticket yet, at most: more are closed at once, so a flood of
connections without one cannot take every file descriptor and thread of a member."""
ACCEPT_BACKOFF_S = (0.05, 1.0)
"""After a failed ``accept()`` (no file descriptor left, say), the pause before the next one:
from the first value, doubling to the second."""
REFUSALS_LOGGED_EVERY_S = 10.0
"""Refused connections are logged once per this many seconds, with how many there were."""
MAX_RECORD_BYTES = 256 * 1024 * 1024
_OFFER = struct.Struct(">H")
_REASON_MARK = 0xFFFFFFFF
_HEARTBEAT_RECORD = FRAME_LENGTH.pack(0)
_READ_BYTES = 256 * 1024
_FLUSH = object()
"""Queued by the reader when TLS has bytes of its own to send: the writer sends them."""
_GOODBYE = object()
"""Queued by :meth:`TcpLink.close`: an empty reason, the link's last record."""
CLOSE_GRACE_S = 5.0
"""How long a link closed from this side may take to send what it had queued."""


def encode_link_offer(port: int, ticket: bytes) -> bytes:
    """The OpenLink answer: the link listener's port and the ticket."""
    return _OFFER.pack(port) + ticket


def decode_link_offer(offer: bytes) -> tuple[int, bytes]:
    if len(offer) != _OFFER.size + TICKET_BYTES:
        raise PacketFormatError(f"an OpenLink answer has {len(offer)} bytes, not {_OFFER.size + TICKET_BYTES}")
    return _OFFER.unpack_from(offer)[0], offer[_OFFER.size:]


def reason_record(reason: str) -> bytes:
    data = reason.encode("utf-8", "replace")
    return FRAME_LENGTH.pack(_REASON_MARK) + FRAME_LENGTH.pack(len(data)) + data


class TicketBook:
    """The tickets a member's server issued and that were not redeemed yet (thread-safe).

    Each holds ``give_back``, the member-link slot taken when it was issued: redeeming hands it to
    the link; an expired ticket gives it back."""

    def __init__(self, ttl_s: float = TICKET_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tickets: dict[bytes, tuple[int, float, Callable[[], None]]] = {}

    def issue(self, peer: int, give_back: Callable[[], None]) -> bytes:
        ticket = secrets.token_bytes(TICKET_BYTES)
        with self._lock:
            expired = self._expired()
            self._tickets[ticket] = (peer, self._clock() + self._ttl_s, give_back)
        for slot in expired:
            slot()
        return ticket

    def redeem(self, ticket: bytes) -> tuple[int, Callable[[], None]] | None:
        """``(member index, give_back)`` of a good ticket (it is good no more), else None."""
        with self._lock:
            expired = self._expired()
            entry = self._tickets.pop(ticket, None)
        for slot in expired:
            slot()
        return None if entry is None else (entry[0], entry[2])

    def close(self) -> None:
        with self._lock:
            slots = [give_back for _, _, give_back in self._tickets.values()]
            self._tickets.clear()
        for slot in slots:
            slot()

    def _expired(self) -> list[Callable[[], None]]:
        now = self._clock()
        gone = [ticket for ticket, (_, deadline, _) in self._tickets.items() if deadline <= now]
        return [self._tickets.pop(ticket)[2] for ticket in gone]


class TlsSession:
    """TLS over one connection, on memory buffers, for a reader and a writer thread."""

    def __init__(self, context: ssl.SSLContext, *, server_side: bool, server_hostname: str | None = None) -> None:
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side,
                                     server_hostname=server_hostname)
        self._lock = threading.Lock()

    def handshake(self, sock: socket.socket) -> None:
        """Run the handshake on the (blocking, time-bounded) socket, before the link's threads."""
        while True:
            try:
                self._ssl.do_handshake()
                break
            except ssl.SSLWantReadError:
                if self._outgoing.pending:
                    sock.sendall(self._outgoing.read())
                data = sock.recv(_READ_BYTES)
                if not data:
                    raise LinkError("the peer closed the connection during the TLS handshake") from None
                self._incoming.write(data)
        if self._outgoing.pending:
            sock.sendall(self._outgoing.read())

    def encrypt(self, plain: bytes) -> bytes:
        """``plain`` as TLS records, after whatever TLS had waiting to send."""
        with self._lock:
            if plain:
                self._ssl.write(plain)
            return self._outgoing.read()

    def decrypt(self, raw: bytes) -> tuple[bytes, bool]:
        """The plaintext in ``raw`` (with what came before it and is still buffered), and
        whether TLS now has bytes of its own to send."""
        parts = []
        with self._lock:
            if raw:
                self._incoming.write(raw)
            while True:
                try:
                    chunk = self._ssl.read(_READ_BYTES)
                except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                    break
                if not chunk:
                    break
                parts.append(chunk)
            return b"".join(parts), self._outgoing.pending > 0


class TcpLink(FrameLink):
    """A :class:`FrameLink` on a TCP socket (see the module docstring).

    Made before its socket exists (frames sent meanwhile wait in its queue); :meth:`attach` starts
    its writer thread and runs its reader on the calling thread. ``on_end()`` runs once when the
    link closes (the server gives its member-link slot back)."""

    def __init__(self, peer_index: int, on_frame: FrameCallback | None,
                 on_connection_lost: ConnectionLostCallback | None,
                 on_end: Callable[[], None] | None = None) -> None:
        super().__init__(peer_index, on_frame, on_connection_lost)
        self._socket: socket.socket | None = None
        self._tls: TlsSession | None = None
        self._on_end = on_end
        self._users = 0
        self._cancel = self._shut_down
        self._writer_idle = False
        """True while the writer waits with nothing queued or unsent (a plaintext link only):
        ``send`` may then write to the socket itself."""
        self._queueing = threading.Lock()

    def attach(self, sock: socket.socket, tls: TlsSession | None, received: bytes = b"") -> None:
        """Carry the link on ``sock``: the writer starts, and this thread reads until the link
        ends. ``received``: plaintext that already came after the ticket."""
        with self._lock:
            if self._closed:
                sock.close()
                return
            self._socket, self._tls, self._users = sock, tls, 2
        sock.settimeout(None)
        if tls is not None:  # what the handshake's reads took beyond it
            received += tls.decrypt(b"")[0]
        threading.Thread(target=self._write_loop, name=f"jet-send-{self.peer_index}", daemon=True).start()
        self._read_records(bytearray(received))

    def close(self) -> None:
        """Close the link from this side: what is queued still goes out, then a goodbye (so the
        peer tells a close from a broken connection), within :data:`CLOSE_GRACE_S`."""
        if self._socket is None:
            super().close()  # not carried yet: attach will find it closed
            return
        self._put(_GOODBYE)
        if self._finish(None, cancel=False):
            timer = threading.Timer(CLOSE_GRACE_S, self._shut_down)
            timer.daemon = True
            timer.start()

    def end_with_reason(self, error: BaseException, reason: str) -> None:
        """End the link after telling the peer ``reason`` (what it sent was refused)."""
        self._put(reason)
        self._finish(error, cancel=False)

    def _finish(self, error: BaseException | None, cancel: bool = True) -> bool:
        finished = super()._finish(error, cancel)
        if finished and self._on_end is not None:
            self._on_end()
        return finished

    def _shut_down(self) -> None:
        sock = self._socket
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _release(self) -> None:
        """The reader and the writer each call this as they end; the last one closes the socket."""
        with self._lock:
            self._users -= 1
            last = self._users <= 0 and self._socket is not None
        if last:
            self._socket.close()

    def _put(self, item: object) -> None:
        """Queue ``item`` for the writer; a frame is written at once instead when the writer is
        idle and the socket takes it whole without waiting: it then costs no wake-up of the
        writer thread (which would also have to take the GIL from the tasklets). Never blocks."""
        with self._queueing:
            if self._writer_idle and type(item) is bytes:
                record = FRAME_LENGTH.pack(len(item)) + item
                try:
                    sent = self._socket.send(record, socket.MSG_DONTWAIT)
                except OSError:  # full (the writer waits for room) or broken (the writer finds out)
                    sent = 0
                if sent == len(record):
                    return
                item = _Unsent(record[sent:])
            self._writer_idle = False
            self._outgoing.put(item)

    def _wait_idle(self, plaintext: bool) -> None:
        """Before the writer blocks for more: mark it idle when nothing is queued."""
        if plaintext:
            with self._queueing:
                if self._outgoing.empty() and not self._closed:
                    self._writer_idle = True

    def _write_loop(self) -> None:
        sock, tls, get = self._socket, self._tls, self._outgoing.get
        try:
            closing = False
            while not closing:
                self._wait_idle(tls is None)
                item = get()
                if item is CLOSE:
                    break
                batch, closing = self._take_batch(item)
                data = b"".join(part for item in batch for part in _record(item))
                if tls is not None:
                    data = tls.encrypt(data)
                if data:
                    sock.sendall(data)
        except OSError as e:
            self._finish(LinkError(f"stream with member {self.peer_index} broke: {e}"))
        finally:
            self._shut_down()
            self._release()

    def _read_records(self, pending: bytearray) -> None:
        on_frame = self._on_frame or no_frame_handler
        sock, tls, unpack, peer = self._socket, self._tls, FRAME_LENGTH.unpack_from, self.peer_index
        established, clock = self.established, time.monotonic
        try:
            while True:
                offset, end = 0, len(pending)
                while end - offset >= 4:
                    length = unpack(pending, offset)[0]
                    if length == _REASON_MARK:
                        if end - offset < 8:
                            break
                        size = unpack(pending, offset + 4)[0]
                        if size > MAX_RECORD_BYTES:
                            raise PacketFormatError(f"member {peer} sent a reason of {size} bytes")
                        if end - offset - 8 < size:
                            break
                        raise _PeerEnded(bytes(pending[offset + 8:offset + 8 + size]).decode("utf-8", "replace"))
                    if length > MAX_RECORD_BYTES:
                        raise PacketFormatError(f"member {peer} sent a record of {length} bytes")
                    if end - offset - 4 < length:
                        break
                    if not established.is_set():
                        established.set()
                    if length:
                        on_frame(peer, bytes(pending[offset + 4:offset + 4 + length]))
                    offset += 4 + length
                if offset:
                    del pending[:offset]
                data = sock.recv(_READ_BYTES)
                if not data:
                    if pending:
                        raise PacketFormatError(f"the stream from member {peer} ends inside a frame")
                    raise LinkError("the connection ended without a goodbye (the process ended, "
                                          "or the network cut it)")
                self.last_message_at = clock()
                if tls is not None:
                    data, flush = tls.decrypt(data)
                    if flush:
                        self._put(_FLUSH)
                pending += data
        except _PeerEnded as e:
            detail = f": {e.reason}" if e.reason else ""
            error: BaseException = LinkError(f"member {peer} closed the stream{detail}")
        except OSError as e:
            error = LinkError(f"stream with member {peer} broke: {e}")
        except Exception as e:  # the frame handler failed (e.g. PacketFormatError): drop the peer
            code, details = self._refusal(e)
            self.end_with_reason(e, f"{code.name}: {details}")
            self._release()
            return
        self._finish(error)
        self._release()


def _record(item: object) -> tuple[bytes, ...]:
    """The parts a queued item travels as: a frame as a record, a heartbeat as an empty one, a
    reason (or the goodbye, an empty reason) as the link's last record, a TLS flush as nothing."""
    if isinstance(item, bytes):
        return FRAME_LENGTH.pack(len(item)), item
    if item is HEARTBEAT:
        return (_HEARTBEAT_RECORD,)
    if item is _GOODBYE or isinstance(item, str):
        return (reason_record("" if item is _GOODBYE else item),)
    if isinstance(item, _Unsent):
        return (item.data,)
    return ()  # _FLUSH


class _Unsent:
    """The part of a record that ``TcpLink.send`` wrote only in part: the writer sends it first."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _PeerEnded(Exception):
    def __init__(self, reason: str | None) -> None:
        super().__init__(reason)
        self.reason = reason


class LinkListener:
    """Accepts members' link connections on one port: runs TLS when configured, reads the ticket,
    and hands ``(socket, tls, ticket, plaintext after it, address)`` to ``on_connection`` on a
    thread of the connection's own (which goes on as the link's reader)."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None,
                 on_connection: Callable[[socket.socket, TlsSession | None, bytes, bytes, str], None]) -> None:
        """Listens on ``host:port`` (``port`` 0: any free port, then :attr:`port` says which)."""
        host = host.strip("[]")
        if ":" in host:
            self._socket = socket.create_server((host, port), family=socket.AF_INET6,
                                                dualstack_ipv6=host == "::" and socket.has_dualstack_ipv6())
        else:
            self._socket = socket.create_server((host, port))
        self.port = self._socket.getsockname()[1]
        self._tls = tls
        self._on_connection = on_connection
        self._greetings = threading.BoundedSemaphore(MAX_GREETINGS)
        self._stopped = False
        self._refusals = _RateLimitedLog(REFUSALS_LOGGED_EVERY_S)
        self._thread = threading.Thread(target=self._accept_loop, name="jet-link-accept", daemon=True)

    def start(self) -> "LinkListener":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped = True
        try:
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing alone would not)
        except OSError:
            pass
        self._socket.close()

    def _accept_loop(self) -> None:
        """Accept until stopped; an error of ``accept()`` itself (no file descriptor left, a
        connection reset before it was taken) is waited out with backoff, never the end."""
        backoff_s = ACCEPT_BACKOFF_S[0]
        while not self._stopped:
            try:
                connection, address = self._socket.accept()
            except OSError as e:
                if self._stopped:
                    return
                self._refusals.log(f"accepting a link connection failed: {e}; retrying in {backoff_s:g} s")
                time.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, ACCEPT_BACKOFF_S[1])
                continue
            backoff_s = ACCEPT_BACKOFF_S[0]
            peer = f"{address[0]}:{address[1]}"
            if not self._greetings.acquire(blocking=False):
                self._refusals.log(f"refused a link connection from {peer}: {MAX_GREETINGS} connections "
                                   "have not shown a ticket yet")
                connection.close()
                continue
            try:
                threading.Thread(target=self._greet, args=(connection, peer), name="jet-link-greet",
                                 daemon=True).start()
            except RuntimeError as e:  # no thread can be started now
                self._greetings.release()
                self._refusals.log(f"refused a link connection from {peer}: {e}")
                connection.close()

    def _greet(self, connection: socket.socket, address: str) -> None:
        try:
            deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.settimeout(HANDSHAKE_TIMEOUT_S)
            tls = None
            if self._tls is not None:
                tls = TlsSession(self._tls, server_side=True)
                tls.handshake(connection)
            ticket, received = read_ticket(connection, tls, deadline)
        except (OSError, ConnectionError, ssl.SSLError) as e:
            self._refusals.log(f"refused a link connection from {address}: {e}")
            connection.close()
            return
        finally:
            self._greetings.release()
        self._on_connection(connection, tls, ticket, received, address)


class _RateLimitedLog:
    """One WARNING per ``every_s`` at most, saying how many more there were meanwhile."""

    def __init__(self, every_s: float) -> None:
        self._every_s = every_s
        self._lock = threading.Lock()
        self._next = 0.0
        self._suppressed = 0

    def log(self, message: str) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                self._suppressed += 1
                return
            suppressed, self._suppressed, self._next = self._suppressed, 0, now + self._every_s
        logger.warning("%s%s", message, f" (and {suppressed} more like it since the last)" if suppressed else "")


def read_ticket(connection: socket.socket, tls: TlsSession | None,
                deadline: float | None = None) -> tuple[bytes, bytes]:
    """``(ticket, plaintext after it)`` from a new connection, by the ``time.monotonic()``
    ``deadline`` if given (a connection sending a byte now and then does not hold on for long).
    With TLS the handshake's last read may have taken the ticket with it (the dialler sends it
    right after its last handshake message), so what TLS holds already comes first."""
    received = tls.decrypt(b"")[0] if tls is not None else b""
    while len(received) < TICKET_BYTES:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LinkError(f"sent no ticket within {HANDSHAKE_TIMEOUT_S:g} s")
            connection.settimeout(left)
        data = connection.recv(_READ_BYTES)
        if not data:
            raise LinkError("closed before sending its ticket")
        received += tls.decrypt(data)[0] if tls is not None else data
    return received[:TICKET_BYTES], received[TICKET_BYTES:]


def send_refusal(sock: socket.socket, tls: TlsSession | None, reason: str) -> None:
    """Tell a connection why its link is refused, and close it."""
    try:
        data = reason_record(reason)
        sock.sendall(tls.encrypt(data) if tls is not None else data)
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def dial_link(link: TcpLink, host: str, port: int, ticket: bytes, tls: ssl.SSLContext | None,
              server_hostname: str | None) -> None:
    """Connect ``link`` to a peer's link listener with ``ticket`` and carry it (blocks as its reader)."""
    sock = socket.create_connection((host, port), timeout=HANDSHAKE_TIMEOUT_S)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        session = None
        if tls is not None:
            session = TlsSession(tls, server_side=False, server_hostname=server_hostname or host)
            session.handshake(sock)
        sock.sendall(session.encrypt(ticket) if session is not None else ticket)
    except BaseException:
        sock.close()
        raise
    link.attach(sock, session)
