"""ReceiverTasklet: the local end of a distributed edge from one remote member."""

from __future__ import annotations

from collections import deque
from typing import Callable

from jet.cluster.edges.chunk_packets import (
    FLAG_BARRIER,
    FLAG_DONE,
    FLAG_TERMINAL,
    FLAG_WATERMARK,
    WATERMARK_FOOTPRINT,
    chunk_footprint,
    decode_chunk_columns,
    payload_bytes,
    watermark_timestamp,
)
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, SnapshotBarrier, SpecialItem, Watermark
from jet.execution.backoff import wake_parked_workers
from jet.execution.outbound import OutboundCollector
from jet.execution.queues import DONE_ITEM
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS, WAS_ALREADY_DONE


class ReceiverTasklet:
    """Owns one queue in the conveyor of every local processor of the destination vertex.

    The network thread appends received frames to ``frames``; this tasklet unpickles them on
    its worker thread and hands each chunk to its local collector (round-robin, broadcast, or
    by the partition id each item carries). A watermark packet becomes a watermark offered to
    every local downstream queue of this receiver, where it is coalesced with the other
    upstream members' and the local processors'; a barrier packet likewise becomes a barrier
    in every local downstream queue. Only what the collector took is acked, and the
    flow-control timer turns the acked bytes into the sender's next limit, so the frames
    waiting here stay within the receive window.
    """

    is_cooperative = True

    def __init__(self, name: str, collector: OutboundCollector, window: ReceiveWindow,
                 partitions_of_items: Callable[[list], list[int]] | None = None) -> None:
        """``partitions_of_items``: given when ``collector`` routes (item, partition id) pairs,
        for frames whose sender sent the items without their ids; the ids of other frames are
        dropped."""
        self.name = name
        self._partitions_of_items = partitions_of_items
        self.frames: deque[bytes] = deque()
        self.window = window
        self._received_bytes = 0  # written by the network thread only
        self._consumed_bytes = 0  # written by the tasklet only
        self.packets_received = 0
        """Frames unpickled (distributedPacketsIn); with ``items_received``, written by the tasklet only."""
        self.items_received = 0
        self._collector = collector
        self._pending: list | None = None
        self._pending_footprint = 0
        self._pending_watermark: SpecialItem | None = None
        """A watermark or barrier to offer to every local queue, after the data before it."""
        self._done_received = False
        self._expected_frames: int | None = None
        """From a DONE notice (:mod:`jet.cluster.edges.done_relay`): the sender is done after this many frames."""
        self._finished = False
        self._quiet = False
        """The last call left nothing in hand: only a frame or a DONE notice can give it work."""

    def enqueue(self, frame: bytes) -> None:
        """Network thread: a frame for this receiver arrived."""
        self._received_bytes += len(frame)
        self.frames.append(frame)
        wake_parked_workers()

    def relay_done(self, frames: int) -> None:
        """Transport thread: the sender is done once this receiver has taken ``frames`` frames."""
        self._expected_frames = frames
        wake_parked_workers()

    def wants_polling(self) -> bool:
        """Polled only while it holds frames or is blocked downstream; a new frame wakes its thread."""
        return (not self.is_buffer_empty() or self._collector.has_pending or self._done_received
                or self._expected_frames is not None)

    @property
    def sender_done(self) -> bool:
        """Whether the sender's DONE has arrived: it sends nothing more, so it needs no more acks."""
        return self._done_received or self._expected_frames is not None

    @property
    def bytes_received(self) -> int:
        """Bytes of the frames that arrived (distributedBytesIn)."""
        return self._received_bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes of frames received and not yet unpickled (for tests and metrics)."""
        return self._received_bytes - self._consumed_bytes

    def is_buffer_empty(self) -> bool:
        return not self.frames and self._pending is None and self._pending_watermark is None

    def init(self) -> None:
        pass

    def close(self) -> None:
        pass

    def call(self) -> int:
        if self._finished:
            return WAS_ALREADY_DONE
        if self._quiet and not self.frames and self._expected_frames is None:
            return NO_PROGRESS  # most calls of most receivers, with many members: keep them cheap
        progress = False
        collector = self._collector
        if not collector.flush():
            self._quiet = False
            return NO_PROGRESS
        while True:
            if self._pending is not None:
                if not collector.offer_chunk(self._pending):
                    break
                self.window.on_item_acked(self._pending_footprint)
                self._pending = None
                progress = True
                if collector.has_pending:
                    break
            if self._pending_watermark is not None:
                if not collector.offer_special(self._pending_watermark):
                    break
                self.window.on_item_acked(WATERMARK_FOOTPRINT)
                self._pending_watermark = None
                progress = True
            if not self.frames:
                break
            frame = self.frames.popleft()
            self._consumed_bytes += len(frame)
            self.packets_received += 1
            header, entries, partitions = decode_chunk_columns(frame)
            progress = True
            if header.flags & FLAG_WATERMARK:
                timestamp = watermark_timestamp(frame)
                self._pending_watermark = (IDLE_MESSAGE if timestamp == MAX_TIMESTAMP
                                           else Watermark(timestamp))
            elif header.flags & FLAG_BARRIER:
                self._pending_watermark = SnapshotBarrier(watermark_timestamp(frame),
                                                          bool(header.flags & FLAG_TERMINAL))
            elif entries:
                if self._partitions_of_items is not None:
                    if partitions is None:
                        partitions = self._partitions_of_items(entries)
                    entries = list(zip(entries, partitions))
                self.items_received += len(entries)
                self._pending = entries
                self._pending_footprint = chunk_footprint(payload_bytes(frame), len(entries))
            if header.flags & FLAG_DONE:
                self._done_received = True
        expected = self._expected_frames
        if expected is not None and not self._done_received and self.packets_received >= expected:
            self._done_received = True
        if self._done_received and self.is_buffer_empty():
            if collector.offer_special(DONE_ITEM):
                self._finished = True
                return DONE
        self._quiet = (self._pending is None and self._pending_watermark is None and not collector.has_pending
                       and not self._done_received)
        return MADE_PROGRESS if progress else NO_PROGRESS

    def __repr__(self) -> str:
        return f"ReceiverTasklet({self.name!r}, {len(self.frames)} frames)"
