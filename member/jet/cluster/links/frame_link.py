"""FrameLink: one end of the frame stream between two members, whatever carries it.

``send(frame)`` queues a frame (it never blocks), incoming frames go to ``on_frame(peer_index,
frame)`` on the link's reader thread in order, and when the link breaks ``on_connection_lost
(peer_index, error)`` is called once (not after a local ``close()``). Every message from the peer
(a batch of frames, or a heartbeat carrying none) refreshes ``last_message_at``. What carries the
frames is a subclass's: :class:`jet.cluster.links.grpc_link.GrpcFrameLink` (a client's gRPC stream) or
:class:`jet.cluster.links.tcp_links.TcpLink` (a member's socket).
"""

from __future__ import annotations

import logging
import queue
import struct
import threading
import time
from typing import Callable

import grpc

from jet.cluster.links.errors import LinkError

FrameCallback = Callable[[int, bytes], None]
ConnectionLostCallback = Callable[[int, BaseException], None]

logger = logging.getLogger(__name__)
CLOSE = object()
HEARTBEAT = object()
FRAME_LENGTH = struct.Struct(">I")
MAX_BATCH_BYTES = 1024 * 1024
"""Queued frames are sent together in one message of up to about this size."""


class FrameLink:
    """One end of the frame stream with one peer member (either the dialling or the serving side)."""

    def __init__(self, peer_index: int, on_frame: FrameCallback | None,
                 on_connection_lost: ConnectionLostCallback | None) -> None:
        self.peer_index = peer_index
        self._on_frame = on_frame
        self._on_connection_lost = on_connection_lost
        self._outgoing: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._cancel: Callable[[], object] | None = None
        """How the transport is torn down when the link fails."""
        self.closed_event = threading.Event()
        """Set once the link is closed, locally or by a failure."""
        self.established = threading.Event()
        """Set when the first message from the peer arrives (the serving side sends a heartbeat
        at once, so on the dialling side this means the peer accepted the stream)."""
        self.last_message_at = time.monotonic()
        """``time.monotonic()`` of the last message from the peer (or of the link's creation)."""
        self.last_frame_sent_at = float("-inf")
        """``time.monotonic()`` of the last frame queued for the peer (a heartbeat is not one)."""

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, frame: bytes) -> None:
        """Queue one frame for the peer (never blocks); raises ``ConnectionError`` once closed."""
        if self._closed:
            raise LinkError(f"the stream to member {self.peer_index} is closed")
        self.last_frame_sent_at = time.monotonic()
        self._put(frame)

    def send_heartbeat(self) -> None:
        """Queue a heartbeat: an empty message, skipped when it would travel with frames anyway."""
        if self._closed:
            raise LinkError(f"the stream to member {self.peer_index} is closed")
        self._put(HEARTBEAT)

    def _put(self, item: object) -> None:
        """Queue ``item`` for the transport's writer."""
        self._outgoing.put(item)

    def fail(self, error: BaseException) -> None:
        """Declare the link lost: cancel the stream and call ``on_connection_lost`` with ``error``
        (once; nothing happens on a link already closed)."""
        self._finish(error)

    def pending_frames(self) -> int:
        """Frames queued and not yet taken by the transport."""
        return self._outgoing.qsize()

    def close(self) -> None:
        """Close the link from this side; ``on_connection_lost`` is not called."""
        self._finish(None)

    def _take_batch(self, first: object) -> tuple[list, bool]:
        """``first`` and what else is queued now, in order, up to :data:`MAX_BATCH_BYTES` of
        frames (a message costs far more than its bytes), and whether ``CLOSE`` came, which ends
        the batch and the link. A heartbeat after the first item is dropped: the message is
        proof of life enough."""
        batch, get_nowait = [first], self._outgoing.get_nowait
        size = len(first) if isinstance(first, bytes) else 0
        while size < MAX_BATCH_BYTES:
            try:
                item = get_nowait()
            except queue.Empty:
                break
            if item is CLOSE:
                return batch, True
            if item is not HEARTBEAT:
                batch.append(item)
                if isinstance(item, bytes):
                    size += len(item)
        return batch, False

    def _refusal(self, error: Exception) -> tuple[grpc.StatusCode, str]:
        """What the peer is told when the frame handler raised ``error`` on its frame (logged),
        in gRPC's status codes, which the socket links' reasons use too."""
        logger.warning("closing the stream with member %d: frame handler raised %r", self.peer_index, error)
        code = grpc.StatusCode.PERMISSION_DENIED if isinstance(error, PermissionError) \
            else grpc.StatusCode.INVALID_ARGUMENT
        return code, f"{type(error).__name__}: {error}"

    def _finish(self, error: BaseException | None, cancel: bool = True) -> bool:
        """Close the link (once: False when it already was), cancelling the transport unless
        ``cancel`` is False (then what is queued still goes out)."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
        if cancel and self._cancel is not None:
            self._cancel()  # before the stream can end normally: the peer sees a cancelled call
        self._put(CLOSE)
        self.closed_event.set()
        if error is not None and self._on_connection_lost is not None:
            try:
                self._on_connection_lost(self.peer_index, error)
            except Exception:
                logger.exception("on_connection_lost(%d) raised", self.peer_index)
        return True


def no_frame_handler(peer_index: int, frame: bytes) -> None:
    raise RuntimeError(f"a frame from member {peer_index} arrived, but no frame handler is registered")
