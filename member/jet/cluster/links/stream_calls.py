"""Control calls between members over their frame stream, instead of a gRPC call each.

A gRPC unary call costs a new HTTP/2 stream, the interceptor's check and thread hand-offs on
both sides: on 16 members sharing 2 cores, a tiny job's coordinator spent about 22 of its 32 ms
of CPU on its calls (``init``, ``start``, ``complete`` out, ``execution_done`` in), against 1.7 ms
for reading 15 frames off the streams (``bench/README.md``, member count, fifth stop).
So a member calls another member with a ``CONTROL_CALL`` frame on the stream they already share
and gets a ``CONTROL_REPLY`` frame back; the reply's status is the gRPC status code the unary call
would have failed with, so callers see the same :class:`ControlCallError`.

Frames (big-endian)::

    u8 type=CONTROL_CALL  | u64 call id | control request (see transport.encode_control_request)
    u8 type=CONTROL_REPLY | u64 call id | u8 status (0: OK, else a grpc.StatusCode) | reply, or details (UTF-8)

Call id 0 is a notice (:meth:`StreamCalls.notify`): it gets no reply. The stream is ordered and
reliable while it lives, and when it breaks the peer is lost, which the coordinator handles
whatever was in flight; so an execution's end report needs no answer.

The stream was authenticated when it opened (a member's proof of its index), so a call's caller
is the stream's peer; clients' streams may not carry these frames (``Member._on_client_frame``).
Handlers run on a pool of their own, never on the stream's reader thread (``init`` waits for
streams, a snapshot phase for tasklets). A call whose peer is lost fails at once, naming the loss.

A caller that calls many members at once (the coordinator's ``init`` of every member) starts the
calls with :meth:`StreamCalls.start` and waits on their futures: no thread waits per call. Their
deadlines are kept by one thread that sleeps until the earliest one and is woken only when a call
comes with an earlier deadline than any waiting (with calls of one timeout: when none was waiting).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import struct
import threading
import time
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable

import grpc

from jet.cluster.links.auth import Caller
from jet.cluster.links.errors import LinkError
from jet.cluster.links.packets import FrameType, PacketFormatError, expect_frame_type
from jet.cluster.links.transport import ControlCallError, encode_control_request

log = logging.getLogger("jet.cluster.links.stream_calls")

_CALL = struct.Struct(">BQ")
_REPLY = struct.Struct(">BQB")
_OK = 0
_NOTICE_ID = 0
_CODES = {code.value[0]: code for code in grpc.StatusCode}
ServeControl = Callable[[Caller, bytes], "tuple[grpc.StatusCode | None, bytes | str]"]
"""``serve(caller, request)`` -> ``(None, reply)`` or ``(status code, details)`` (transport.serve_control)."""


def encode_call(call_id: int, msg_type: str, payload: bytes) -> bytes:
    return _CALL.pack(FrameType.CONTROL_CALL, call_id) + encode_control_request(msg_type, payload)


def decode_call(frame: bytes) -> tuple[int, bytes]:
    """``(call id, control request)``; raises :class:`PacketFormatError` when malformed."""
    expect_frame_type(frame, FrameType.CONTROL_CALL)
    if len(frame) < _CALL.size:
        raise PacketFormatError(f"truncated CONTROL_CALL frame of {len(frame)} bytes")
    return _CALL.unpack_from(frame)[1], frame[_CALL.size:]


def encode_reply(call_id: int, code: grpc.StatusCode | None, body: bytes | str) -> bytes:
    status = _OK if code is None else code.value[0]
    data = body if isinstance(body, bytes) else body.encode("utf-8", "replace")
    return _REPLY.pack(FrameType.CONTROL_REPLY, call_id, status) + data


def decode_reply(frame: bytes) -> tuple[int, grpc.StatusCode | None, bytes]:
    """``(call id, status code or None for OK, reply or details)``."""
    expect_frame_type(frame, FrameType.CONTROL_REPLY)
    if len(frame) < _REPLY.size:
        raise PacketFormatError(f"truncated CONTROL_REPLY frame of {len(frame)} bytes")
    _, call_id, status = _REPLY.unpack_from(frame)
    if status != _OK and status not in _CODES:
        raise PacketFormatError(f"CONTROL_REPLY with unknown status {status}")
    return call_id, None if status == _OK else _CODES[status], frame[_REPLY.size:]


class StreamCalls:
    """One member's control calls to its peers and its answers to theirs, over the member streams."""

    def __init__(self, send_frame: Callable[[int, bytes], None], serve: ServeControl, threads: int) -> None:
        """``send_frame(peer, frame)`` raises ``ConnectionError`` when there is no stream with ``peer``."""
        self._send_frame = send_frame
        self._serve = serve
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="jet-calls")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[int, str, Future]] = {}
        """Call id -> (peer, message type, the reply's future)."""
        self._deadlines: list[tuple[float, int, float]] = []
        """Heap of (deadline, call id, timeout_s) of the calls started with :meth:`start`."""
        self._deadline_changed = threading.Condition(self._lock)
        self._sweeper: threading.Thread | None = None
        self._closed = False

    def call(self, peer: int, msg_type: str, payload: bytes, timeout_s: float) -> bytes:
        """One control call to ``peer``; raises :class:`ControlCallError` as a gRPC call would
        (the peer's handler failed, no answer within ``timeout_s``, the peer was lost), or
        ``ConnectionError`` when there is no stream with it."""
        call_id, reply = self._register(peer, msg_type)
        try:
            self._send_frame(peer, encode_call(call_id, msg_type, payload))
            return reply.result(timeout=timeout_s)
        except FutureTimeout:
            raise ControlCallError(peer, msg_type, grpc.StatusCode.DEADLINE_EXCEEDED,
                                   f"no answer within {timeout_s:g} s") from None
        finally:
            with self._lock:
                self._pending.pop(call_id, None)

    def start(self, peer: int, msg_type: str, payload: bytes, timeout_s: float) -> Future:
        """Send one control call to ``peer`` and return the future of its reply at once; the
        future fails as :meth:`call` raises (``DEADLINE_EXCEEDED`` once ``timeout_s`` passed)."""
        call_id, reply = self._register(peer, msg_type)
        reply.add_done_callback(lambda _: self._forget(call_id))
        try:
            self._send_frame(peer, encode_call(call_id, msg_type, payload))
        except ConnectionError as e:
            _settle(reply, error=e)
            return reply
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if reply.done():
                return reply
            earliest = self._deadlines[0][0] if self._deadlines else None
            heapq.heappush(self._deadlines, (deadline, call_id, timeout_s))
            if self._sweeper is None:
                self._sweeper = threading.Thread(target=self._sweep, name="jet-call-deadlines", daemon=True)
                self._sweeper.start()
            elif earliest is None or deadline < earliest:
                self._deadline_changed.notify()
        return reply

    def run_here(self, handler: Callable[..., bytes], *args: object) -> Future:
        """``handler(*args)`` on the handlers' pool (a call a member makes to itself), as a future."""
        try:
            return self._pool.submit(handler, *args)
        except RuntimeError as e:  # shutting down
            failed: Future = Future()
            failed.set_exception(LinkError(f"this member is stopping: {e}"))
            return failed

    def _register(self, peer: int, msg_type: str) -> tuple[int, Future]:
        call_id, reply = next(self._ids), Future()  # from 1: 0 is a notice
        with self._lock:
            self._pending[call_id] = (peer, msg_type, reply)
        return call_id, reply

    def _forget(self, call_id: int) -> None:
        with self._lock:
            self._pending.pop(call_id, None)

    def _sweep(self) -> None:
        """Fail the started calls whose deadline passed; sleep until the next deadline."""
        with self._lock:
            while not self._closed:
                now, expired = time.monotonic(), []
                while self._deadlines and (self._deadlines[0][0] <= now or self._deadlines[0][1] not in self._pending):
                    _, call_id, timeout_s = heapq.heappop(self._deadlines)
                    entry = self._pending.pop(call_id, None)
                    if entry is not None:
                        expired.append((entry, timeout_s))
                if expired:
                    self._lock.release()
                    try:
                        for (peer, msg_type, reply), timeout_s in expired:
                            _settle(reply, error=ControlCallError(peer, msg_type, grpc.StatusCode.DEADLINE_EXCEEDED,
                                                                  f"no answer within {timeout_s:g} s"))
                    finally:
                        self._lock.acquire()
                    continue
                self._deadline_changed.wait(self._deadlines[0][0] - now if self._deadlines else None)

    def notify(self, peer: int, msg_type: str, payload: bytes) -> None:
        """A control message to ``peer`` that wants no reply (a refusal or failure of its handler
        is logged there); ``ConnectionError`` when there is no stream with ``peer``."""
        self._send_frame(peer, encode_call(_NOTICE_ID, msg_type, payload))

    def on_call_frame(self, peer: int, frame: bytes) -> None:
        """Transport thread: a peer's call, answered from the pool."""
        call_id, request = decode_call(frame)
        try:
            self._pool.submit(self._answer, peer, call_id, request)
        except RuntimeError:  # shutting down: the caller hears of the loss of this member
            log.debug("member stopping: a call from member %d is not answered", peer)

    def on_reply_frame(self, peer: int, frame: bytes) -> None:
        """Transport thread: the answer to one of this member's calls (a late one is dropped)."""
        call_id, code, body = decode_reply(frame)
        with self._lock:
            entry = self._pending.get(call_id)
        if entry is None or entry[0] != peer:
            return
        _, msg_type, reply = entry
        if code is None:
            _settle(reply, result=body)
        else:
            _settle(reply, error=ControlCallError(peer, msg_type, code, body.decode("utf-8", "replace")))

    def peer_lost(self, peer: int, error: BaseException) -> None:
        """Every call waiting on ``peer`` fails with the loss."""
        with self._lock:
            lost = [(msg_type, reply) for p, msg_type, reply in self._pending.values() if p == peer]
        for msg_type, reply in lost:
            _settle(reply, error=ControlCallError(peer, msg_type, grpc.StatusCode.UNAVAILABLE,
                                                  f"the stream with member {peer} was lost: {error}"))

    def close(self) -> None:
        """No more answers; calls still waiting fail."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            waiting = list(self._pending.values())
            self._closed = True
            self._deadline_changed.notify()
        for peer, msg_type, reply in waiting:
            _settle(reply, error=ControlCallError(peer, msg_type, grpc.StatusCode.UNAVAILABLE,
                                                  "this member is stopping"))

    def _answer(self, peer: int, call_id: int, request: bytes) -> None:
        code, body = self._serve(Caller(peer), request)
        if call_id == _NOTICE_ID:
            return  # a failure is logged by serve
        try:
            self._send_frame(peer, encode_reply(call_id, code, body))
        except ConnectionError as e:  # the caller hears of the loss
            log.debug("the answer to member %d's call is not sent: %s", peer, e)


def _settle(reply: Future, result: bytes | None = None, error: BaseException | None = None) -> None:
    """Complete ``reply`` unless it already is (a reply, a loss and a deadline may race)."""
    try:
        if error is None:
            reply.set_result(result)
        else:
            reply.set_exception(error)
    except InvalidStateError:
        pass
