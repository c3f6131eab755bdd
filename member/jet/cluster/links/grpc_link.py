"""GrpcFrameLink: a :class:`~jet.cluster.links.frame_link.FrameLink` carried by a gRPC stream.

A client's (a Spark task's, a ``JetClient``'s) frames travel on ``/jet.Member/Stream``
(:mod:`jet.cluster.links.transport`): each message is one or more ``u32 length | frame``, and an empty
message is a heartbeat. Queued frames go out together in one message of up to
:data:`~jet.cluster.links.frame_link.MAX_BATCH_BYTES`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterable, Iterator

import grpc

from jet.cluster.links.errors import LinkError
from jet.cluster.links.frame_link import CLOSE, FRAME_LENGTH, HEARTBEAT, FrameLink, no_frame_handler
from jet.cluster.links.packets import PacketFormatError


class GrpcFrameLink(FrameLink):
    """One end of a client's frame stream (the dialling or the serving side)."""

    _set_status: Callable[[grpc.StatusCode, str], None] | None = None

    def bind(self, cancel: Callable[[], object],
             set_status: Callable[[grpc.StatusCode, str], None] | None = None) -> None:
        """The call that carries the link: how to cancel it, and on the serving side how to end
        it with a status instead (the peer then learns why its frame was refused)."""
        self._cancel, self._set_status = cancel, set_status

    def outgoing_messages(self) -> Iterator[bytes]:
        """The stream's messages: the queued frames, each ``u32 length | frame`` (a heartbeat
        alone: empty), until the link closes."""
        pack_length = FRAME_LENGTH.pack
        while (item := self._outgoing.get()) is not CLOSE:
            batch, closing = self._take_batch(item)
            frames = [frame for frame in batch if frame is not HEARTBEAT]
            yield b"".join(part for frame in frames for part in (pack_length(len(frame)), frame))
            if closing:
                return

    def start_reader(self, incoming: Iterable[bytes], name: str) -> threading.Thread:
        """A thread that reads the stream's messages and hands their frames to ``on_frame``."""
        thread = threading.Thread(target=self._read_loop, args=(incoming,), name=name, daemon=True)
        thread.start()
        return thread

    def _read_loop(self, incoming: Iterable[bytes]) -> None:
        on_frame = self._on_frame or no_frame_handler
        unpack_length = FRAME_LENGTH.unpack_from
        clock, established = time.monotonic, self.established
        try:
            for message in incoming:
                self.last_message_at = clock()
                if not established.is_set():
                    established.set()
                offset, end = 0, len(message)
                while offset < end:
                    if offset + 4 > end or offset + 4 + (length := unpack_length(message, offset)[0]) > end:
                        raise PacketFormatError(f"a message from member {self.peer_index} ends inside a frame")
                    offset += 4
                    on_frame(self.peer_index, message[offset:offset + length])
                    offset += length
            error: BaseException = LinkError(f"member {self.peer_index} closed the stream")
        except grpc.RpcError as e:
            error = LinkError(f"stream with member {self.peer_index} broke: {describe_rpc_error(e)}")
            error.__cause__ = e
        except Exception as e:  # the frame handler failed (e.g. PacketFormatError): drop the peer
            code, details = self._refusal(e)
            if self._set_status is not None:  # tell the peer why, rather than cancelling
                self._set_status(code, details)
                self._finish(e, cancel=False)
                return
            error = e
        self._finish(error)


def describe_rpc_error(error: grpc.RpcError) -> str:
    """A failed call's status and details, for an error message."""
    if isinstance(error, grpc.Call):
        return f"{error.code().name}: {error.details()}"
    return "the call was cancelled or the peer went away"
