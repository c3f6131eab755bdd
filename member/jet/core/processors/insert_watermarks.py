"""Jet's InsertWatermarksP: stamps a stream of plain items and inserts watermarks into it."""

from __future__ import annotations

from typing import Callable

from jet.core.event_time import EventTimeMapper, EventTimePolicy, wall_clock_ms
from jet.core.inbox import Inbox
from jet.core.processors.base import ChunkEmittingProcessor, Supplier
from jet.core.processors.snapshot_state import own_key, tagged, unexpected_entry

_NOTHING: list = []


class InsertWatermarksP(ChunkEmittingProcessor):
    """Bare items in; ``(timestamp, item)`` pairs and watermarks out (one source partition).

    Each inbox chunk is stamped in one go and the watermark it makes due follows it. Idleness
    and the real-time lag of ingestion time advance on the wall clock in ``try_process``. Late
    items are never dropped here (as in Jet 4.x). ``late_events_dropped`` is always 0.

    Snapshots: its watermark and the last one it emitted under ``BroadcastKey(("wm",
    global_index))``; a restored processor starts from the minimum over every processor that
    saved, so it never emits a watermark below what downstream already saw.
    """

    def __init__(self, policy: EventTimePolicy, clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self._policy = policy
        self._clock_ms = clock_ms
        self._mapper: EventTimeMapper | None = None
        self._pairs: list = _NOTHING
        self._watermarks: list = []
        self._restored: list = []
        self.late_events_dropped = 0

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._mapper = EventTimeMapper(self._policy)
        self._mapper.add_partitions(1, self._clock_ms())

    def _flush(self) -> bool:
        """Emit the pending pairs, then the pending watermarks; True when nothing is left."""
        if self._pairs is not _NOTHING:
            if not self.emit_list(self._pairs):
                return False
            self._pairs = _NOTHING
        while self._watermarks:
            if not self.outbox.offer_watermark(self._watermarks[0]):
                return False
            del self._watermarks[0]
        return True

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self._flush():
            return
        pairs, watermark = self._mapper.map_chunk(inbox.take_chunk(), 0, self._clock_ms())
        self._pairs = pairs
        if watermark is not None:
            self._watermarks.append(watermark)
        self._flush()

    def try_process(self) -> bool:
        if not self._flush():
            return False
        self._watermarks.extend(self._mapper.on_idle(self._clock_ms()))
        return self._flush()

    def try_process_watermark(self, watermark) -> bool:
        # This vertex makes the stream's watermarks; one arriving from upstream is swallowed.
        return True

    def complete(self) -> bool:
        return self._flush()

    def save_to_snapshot(self) -> bool:
        if not self._flush() or self.outbox.pending_special is not None:
            return False  # the pairs and watermarks of items taken before the barrier go first
        self.outbox.offer_to_snapshot(own_key("wm", self.context), self._mapper.watermark_state())
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, value in inbox.take_chunk():
            if tagged(key, "wm") is None:
                raise unexpected_entry(self.context.vertex_name, self, key)
            self._restored.append(value)

    def finish_snapshot_restore(self) -> bool:
        self._mapper.restore_watermark_states(self._restored)
        return True


def insert_watermarks_p(policy: EventTimePolicy,
                        clock_ms: Callable[[], int] = wall_clock_ms) -> Supplier:
    """Stamp bare items by ``policy`` and insert its watermarks (``clock_ms``: the wall clock)."""
    if not isinstance(policy, EventTimePolicy):
        raise TypeError(f"insert_watermarks_p: policy must be an EventTimePolicy, got {policy!r}")
    return lambda: InsertWatermarksP(policy, clock_ms)
