"""What the event-time processors share: counting late events and emitting before a watermark."""

from __future__ import annotations

import time
from itertools import chain
from typing import Any, Callable, Iterable

from jet.core.processors.base import ChunkEmittingProcessor
from jet.core.processors.snapshot_state import own_key
from jet.core.special_items import Watermark

#: At most one INFO line about dropped late events per this many milliseconds and processor.
LATE_EVENTS_LOG_INTERVAL_MS = 1_000


def monotonic_ms() -> int:
    """A monotonic clock in milliseconds (early-result periods; never event time)."""
    return time.monotonic_ns() // 1_000_000


class StreamingProcessor(ChunkEmittingProcessor):
    """A chunk-emitting processor that drops late events visibly and emits results before a wm.

    ``late_events_dropped`` counts every late event dropped (Jet's ``lateEventsDropped``
    probe); the first drop and then at most one per second are logged at INFO.

    Its event-time progress (watermark, next window) is saved per processor by
    :meth:`save_state` after its keyed state and restored as the minimum over every processor
    of the vertex (``restored_progress``), so a restored processor is never ahead of any that saved.
    """

    restored_progress: tuple | None = None

    late_events_dropped = 0
    _last_late_log_ms: int | None = None
    _unfinished: list | None = None
    _before_wm: list | None = None
    _final: list | None = None
    _next_early_ms: int | None = None

    def early_results_due(self, period_ms: int, clock_ms: Callable[[], int]) -> bool:
        """Whether ``period_ms`` of ``clock_ms`` passed since the last early results (the first
        period starts at the first call)."""
        now = clock_ms()
        if self._next_early_ms is None:
            self._next_early_ms = now + period_ms
        if now < self._next_early_ms:
            return False
        self._next_early_ms = now + period_ms
        return True

    def save_state(self, entries: Callable[[], Iterable[tuple[Any, Any]]], *progress: int) -> bool:
        """``save_to_snapshot``: finish the output in progress, then offer ``entries()`` and this
        processor's progress (under ``BroadcastKey(("progress", global_index))``), resuming
        where the outbox refused on the next call; True once all is saved."""
        progress_entry = ((own_key("progress", self.context), progress),)
        return self.save_entries(lambda: chain(entries(), progress_entry))

    def merge_restored_progress(self, values: tuple) -> None:
        """Merge a restored progress entry into ``restored_progress``, value by value (minimum)."""
        current = self.restored_progress
        self.restored_progress = tuple(values) if current is None else tuple(map(min, current, values))

    def drop_late(self, count: int, watermark: int) -> None:
        """Count ``count`` late events (behind ``watermark``) and log about it now and then."""
        self.late_events_dropped += count
        now = monotonic_ms()
        if self._last_late_log_ms is None or now - self._last_late_log_ms >= LATE_EVENTS_LOG_INTERVAL_MS:
            self._last_late_log_ms = now
            self.context.logger.info(
                "dropped %d late event(s) behind watermark %d (%d dropped so far)", count,
                watermark, self.late_events_dropped)

    def start_emitting(self, results: list) -> bool:
        """Emit ``results`` now or, when the outbox is full, through :meth:`emit_unfinished`."""
        self._unfinished = results
        return self.emit_unfinished()

    def emit_unfinished(self) -> bool:
        """Go on emitting what ``start_emitting`` began; True when nothing is left."""
        if self._unfinished is not None:
            if not self.emit_list(self._unfinished):
                return False
            self._unfinished = None
        return True

    def emit_then_forward(self, watermark: Watermark, results: Callable[[], list]) -> bool:
        """Emit ``results()`` (called once per watermark), then forward ``watermark``.

        Whatever ``start_emitting`` left unfinished goes out first."""
        if not self.emit_unfinished():
            return False
        if self._before_wm is None:
            self._before_wm = results()
        if self._before_wm and not self.emit_list(self._before_wm):
            return False
        self._before_wm = []  # emitted: a retry only offers the watermark again
        if not self.outbox.offer_watermark(watermark):
            return False
        self._before_wm = None
        return True

    def emit_final(self, results: Callable[[], list]) -> bool:
        """Emit ``results()`` (called once) at ``complete()``; True when all of it is out."""
        if not self.emit_unfinished():
            return False
        if self._final is None:
            self._final = results()
        return self.emit_list(self._final)
