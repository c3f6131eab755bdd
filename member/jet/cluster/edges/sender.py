"""SenderTasklet: the local end of a distributed edge towards one remote member."""

from __future__ import annotations

from typing import Callable

from jet.cluster.edges.chunk_packets import (
    WATERMARK_FOOTPRINT,
    chunk_footprint,
    encode_barrier,
    encode_chunk,
    encode_watermark,
    mark_done,
    payload_bytes,
)
from jet.cluster.edges.done_relay import IN_BAND
from jet.cluster.edges.flow_control import SendLimit
from jet.core.inbox import Inbox
from jet.core.special_items import SnapshotBarrier, Watermark
from jet.execution.inbound import InboundEdgeStream
from jet.execution.tasklet import DONE, DONE_BIT, MADE_PROGRESS, NO_PROGRESS, PROGRESS_BIT, WAS_ALREADY_DONE

#: Packets one call may send before yielding to the other tasklets of its worker.
MAX_PACKETS_PER_CALL = 16
#: The share of packet_size_limit a packet aims at, so that a packet rarely needs cutting.
FILL_TARGET = 0.9


class SenderTasklet:
    """Reads the conveyor of one (edge, remote member) and sends it in chunk packets.

    Every local upstream processor has a queue into this sender, read through an
    InboundEdgeStream like any processor input, so DONE and snapshot barriers are aligned before
    they cross the network, and the watermarks of the local upstream processors are coalesced:
    the sender forwards their minimum (or IDLE), and an aligned barrier, in a packet of its
    own, after the items drained before it. A packet holds at most ``packet_size_limit`` bytes of pickled items
    (a single larger item travels alone, as a Jet packet may overshoot by one item). Before each
    packet the flow-control limit from the receiver's last ack must allow it.
    """

    is_cooperative = True

    def __init__(self, name: str, stream: InboundEdgeStream, send_frame: Callable[[bytes], None],
                 execution_id: int, dest_vertex_id: int, dest_ordinal: int,
                 packet_size_limit: int, pairs: bool, on_finished: Callable[[int], None]) -> None:
        """``on_finished(frames)``: a DONE that no frame can carry is not sent but handed to it
        with the frames sent (:mod:`jet.cluster.edges.done_relay`); a DONE that the last frame
        carried is told to it as ``IN_BAND``."""
        self.name = name
        self.send_limit = SendLimit()
        self.sent_seq_bytes = 0
        self.packets_sent = 0
        self.bytes_sent = 0
        """Bytes of the frames sent (distributedBytesOut); counted per packet, on this tasklet's thread."""
        self.items_sent = 0
        self._stream = stream
        self._send_frame = send_frame
        self._route = (execution_id, dest_vertex_id, dest_ordinal)
        self._packet_size_limit = packet_size_limit
        self._pairs = pairs
        self._on_finished = on_finished
        self._buffer = Inbox()
        self._average_item_bytes = 32.0
        self._input_done = False
        self._done_sent = False
        self._watermark: Watermark | None = None
        self._barrier: SnapshotBarrier | None = None

    def init(self) -> None:
        pass

    def wants_polling(self) -> bool:
        """Polled only while it holds something to send; items in its queues and acks wake its thread."""
        return bool(self._buffer) or self._watermark is not None or self._barrier is not None or self._input_done

    def close(self) -> None:
        pass

    def call(self) -> int:
        if self._done_sent:
            return WAS_ALREADY_DONE
        progress = False
        buffer = self._buffer
        if not buffer and self._watermark is None and self._barrier is None and not self._input_done:
            stream = self._stream
            if not stream.may_have_input():
                return NO_PROGRESS  # most calls of most senders, with many members: keep them cheap
            result = stream.drain_to(buffer)
            progress = bool(result & PROGRESS_BIT)
            self._input_done = bool(result & DONE_BIT)
            if stream.pending_watermark is not None:
                self._watermark, stream.pending_watermark = stream.pending_watermark, None
            if stream.pending_barrier is not None:
                self._barrier, stream.pending_barrier = stream.pending_barrier, None
        packets = 0
        while buffer and packets < MAX_PACKETS_PER_CALL and self.send_limit.may_send(self.sent_seq_bytes):
            self._send_packet(buffer)
            packets += 1
            progress = True
        if self._done_sent:  # the last packet carried DONE
            self._on_finished(IN_BAND)
            return DONE
        if self._watermark is not None and not buffer and self.send_limit.may_send(self.sent_seq_bytes):
            self._send_counted(encode_watermark(*self._route, self._watermark.timestamp))
            self.sent_seq_bytes += WATERMARK_FOOTPRINT
            self._watermark = None
            progress = True
        if (self._barrier is not None and self._watermark is None and not buffer
                and self.send_limit.may_send(self.sent_seq_bytes)):
            barrier, self._barrier = self._barrier, None
            self._send_counted(encode_barrier(*self._route, barrier.snapshot_id, barrier.is_terminal))
            self.sent_seq_bytes += WATERMARK_FOOTPRINT
            progress = True
        if self._input_done and not buffer and self._watermark is None and self._barrier is None:
            self._done_sent = True
            self._on_finished(self.packets_sent)
            return DONE
        return MADE_PROGRESS if progress else NO_PROGRESS

    def _send_packet(self, buffer: Inbox) -> None:
        """One packet of at most ``packet_size_limit`` bytes of items (a single item may be larger),
        marked DONE when it holds the last items of a finished input.

        The item count aims at 90 % of the limit by the running average item size; a packet that
        still comes out too large is cut by its measured size and encoded again.
        """
        limit = self._packet_size_limit
        entries = buffer.peek_chunk(max(1, int(FILL_TARGET * limit / self._average_item_bytes)))
        frame = encode_chunk(*self._route, entries, pairs=self._pairs)
        while payload_bytes(frame) > limit and len(entries) > 1:
            keep = min(len(entries) - 1, max(1, len(entries) * limit // payload_bytes(frame)))
            entries = entries[:keep]
            frame = encode_chunk(*self._route, entries, pairs=self._pairs)
        if (len(entries) == len(buffer) and self._input_done and self._watermark is None
                and self._barrier is None):
            # The last items: DONE travels with them (a short job's k - 1 streams then carry
            # one frame each, not two).
            frame = mark_done(frame)
            self._done_sent = True
        buffer.take_chunk(len(entries))
        size = payload_bytes(frame)
        self._average_item_bytes = 0.7 * self._average_item_bytes + 0.3 * (size / len(entries))
        self.sent_seq_bytes += chunk_footprint(size, len(entries))
        self._send_frame(frame)
        self.packets_sent += 1
        self.bytes_sent += len(frame)
        self.items_sent += len(entries)

    def _send_counted(self, frame: bytes) -> None:
        """Send a frame that carries no items (a watermark, a barrier), counting it."""
        self._send_frame(frame)
        self.packets_sent += 1
        self.bytes_sent += len(frame)

    def __repr__(self) -> str:
        return f"SenderTasklet({self.name!r})"
