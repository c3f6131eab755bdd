"""A finite stream source for tests, and plain-Python oracles of windows over its events.

``finite_stream`` deals a fixed list of events to its processors (or gives them all to the
first one), emits them in small chunks with the watermarks of the event-time policy the planner
gives it, and completes: when every source completes, windows flush and the job ends, so a test
gets exact results from a stream.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any, Callable

import cloudpickle
from jet.core.event_time import EventTimeMapper, EventTimePolicy
from jet.core.processor import Processor
from jet.core.special_items import Watermark
from jet.core.window_results import KeyedWindowResult, WindowResult
from jet.pipeline.source_sink import StreamSource

# Member processes of a local cluster cannot import the tests: the source travels by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class FiniteStreamP(Processor):
    """Emits its share of ``events`` ``chunk_size`` at a time (timestamped by ``policy`` when
    given, each chunk followed by the watermark it makes due), then completes."""

    def __init__(self, events: list, policy: EventTimePolicy | None, chunk_size: int,
                 all_on_first: bool, native_ts: Callable[[Any], int] | None, pause_s: float) -> None:
        self._events = events
        self._policy = policy
        self._chunk_size = chunk_size
        self._all_on_first = all_on_first
        self._native_ts = native_ts
        self._pause_s = pause_s
        self.is_cooperative = pause_s == 0

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        if self._all_on_first:
            share = self._events if context.global_index == 0 else []
        else:
            share = self._events[context.global_index::context.total_parallelism]
        self._chunks = [share[i:i + self._chunk_size] for i in range(0, len(share), self._chunk_size)]
        self._pending: list = []
        self._mapper = None
        if self._policy is not None:
            self._mapper = EventTimeMapper(self._policy)
            self._mapper.add_partitions(1, _now_ms())

    def complete(self) -> bool:
        while self._pending:
            head = self._pending[0]
            offered = (self.outbox.offer_watermark(head) if isinstance(head, Watermark)
                       else self.outbox.offer_chunk(head))
            if not offered:
                return False
            del self._pending[0]
        if not self._chunks:
            return True
        if self._pause_s:
            time.sleep(self._pause_s)
        chunk = self._chunks.pop(0)
        if self._mapper is None:
            self._pending.append(chunk)
        else:
            native = list(map(self._native_ts, chunk)) if self._native_ts else None
            pairs, watermark = self._mapper.map_chunk(chunk, 0, _now_ms(), native)
            self._pending.append(pairs)
            if watermark is not None:
                self._pending.append(watermark)
        return False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def finite_stream(events: list, name: str = "events", local_parallelism: int = 2, chunk_size: int = 3,
                  all_on_first: bool = False, native_ts: Callable[[Any], int] | None = None,
                  emits_watermarks: bool = True, pause_s: float = 0.0) -> StreamSource:
    """A StreamSource of ``events``; ``emits_watermarks=False`` makes the planner add the
    ``-add-timestamps`` vertex; ``native_ts`` gives native timestamps; ``pause_s`` paces it."""

    def processor(policy):
        return lambda: FiniteStreamP(events, policy, chunk_size, all_on_first, native_ts, pause_s)

    return StreamSource(name, processor(None), local_parallelism=local_parallelism,
                        policy_supplier=processor if emits_watermarks else None,
                        native_timestamps=native_ts is not None)


# -- oracles ------------------------------------------------------------------------------------
def sliding_windows(timestamp: int, size_ms: int, slide_ms: int) -> list[tuple[int, int]]:
    """The [start, end) windows, aligned to the epoch, that contain ``timestamp``."""
    last_start = timestamp - timestamp % slide_ms
    return [(start, start + size_ms) for start in range(last_start - size_ms + slide_ms, last_start + 1,
                                                        slide_ms)]


def sliding_counts(events: list, ts_fn, key_fn, size_ms: int, slide_ms: int) -> list:
    """Count per key and window (KeyedWindowResult), or per window (WindowResult) without key_fn."""
    counts: dict = defaultdict(int)
    for event in events:
        for window in sliding_windows(ts_fn(event), size_ms, slide_ms):
            counts[window + ((key_fn(event),) if key_fn else ())] += 1
    if key_fn is None:
        return sorted(WindowResult(start, end, n) for (start, end), n in counts.items())
    return sorted(KeyedWindowResult(start, end, key, n) for (start, end, key), n in counts.items())


def session_counts(events: list, ts_fn, key_fn, timeout_ms: int) -> list:
    """Per key, events within ``timeout_ms`` of the previous one share a window [first, last + timeout)."""
    by_key: dict = defaultdict(list)
    for event in events:
        by_key[key_fn(event) if key_fn else None].append(ts_fn(event))
    results = []
    for key, stamps in by_key.items():
        stamps.sort()
        start, end, count = stamps[0], stamps[0] + timeout_ms, 0
        for ts in stamps:
            if ts > end:
                results.append((start, end, key, count))
                start, count = ts, 0
            end, count = max(end, ts + timeout_ms), count + 1
        results.append((start, end, key, count))
    if key_fn is None:
        return sorted(WindowResult(start, end, n) for start, end, _, n in results)
    return sorted(KeyedWindowResult(*result) for result in results)
