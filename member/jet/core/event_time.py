"""Event time at sources: Jet's EventTimePolicy, WatermarkPolicy and EventTimeMapper.

A *timestamped item* is a plain 2-tuple ``(timestamp_ms, item)``. Between the vertex that
assigns timestamps (a source applying this policy, or ``insert_watermarks_p``) and the vertex
that consumes them (windows, stateful mapping, a sink stage's unwrapping step), every item of
a stream stage is such a pair; batch stages never carry timestamps, so their hot path does
not change.

``EventTimeMapper`` is the helper every watermark-emitting source uses: it stamps a chunk of
items, tracks one watermark per source partition and tells the source which watermark (if
any) to emit after the chunk. Times passed in as ``now_ms`` are the wall clock in epoch
milliseconds (:func:`wall_clock_ms`): ingestion timestamps, the real-time lag and the idle
deadlines all read it, so a test can inject any clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from jet.core.sliding_window_policy import SlidingWindowPolicy
from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark

#: Jet's default time after which a source partition without events stops holding the watermark back.
DEFAULT_IDLE_TIMEOUT_MS = 60_000


def wall_clock_ms() -> int:
    """The wall clock in epoch milliseconds, the ``now_ms`` an ``EventTimeMapper`` expects."""
    return time.time_ns() // 1_000_000


def _check_non_negative_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"EventTimePolicy.{name} must be an int >= 0 (ms), got {value!r}")


@dataclass(frozen=True)
class EventTimePolicy:
    """How a source (or the inserted watermark vertex) assigns timestamps and emits watermarks.

    - ``timestamp_fn(item) -> int`` (epoch ms); None means the source's native timestamp.
    - ``allowed_lag_ms``: Jet's limiting lag, watermark = max(watermark, top timestamp - lag).
    - ``ingestion``: the timestamp is the wall clock at the source and the watermark follows the
      wall clock minus the lag even without events (Jet 4.3's limitingRealTimeLag).
    - ``idle_timeout_ms``: a partition without events for this long stops holding the watermark
      back (0 disables idleness).
    - ``frame_size_ms`` / ``frame_offset_ms``: watermark throttling; an emitted watermark is
      floored to a frame boundary, so a stream costs one watermark per frame, not per item.
      Size 0 suppresses watermarks altogether (as in Jet); the planner sets the size.
    """

    timestamp_fn: Callable[[Any], int] | None = None
    allowed_lag_ms: int = 0
    ingestion: bool = False
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    frame_size_ms: int = 1
    frame_offset_ms: int = 0

    def __post_init__(self) -> None:
        if self.timestamp_fn is not None and not callable(self.timestamp_fn):
            raise TypeError(f"EventTimePolicy.timestamp_fn must be callable or None,"
                            f" got {self.timestamp_fn!r}")
        for name in ("allowed_lag_ms", "idle_timeout_ms", "frame_size_ms", "frame_offset_ms"):
            _check_non_negative_int(name, getattr(self, name))
        if self.frame_size_ms and self.frame_offset_ms >= self.frame_size_ms:
            raise ValueError(f"EventTimePolicy.frame_offset_ms must be < frame_size_ms ="
                             f" {self.frame_size_ms}, got {self.frame_offset_ms}")

    def new_watermark_policy(self) -> "WatermarkPolicy":
        """A fresh watermark policy for one source partition."""
        if self.ingestion:
            return LimitingRealTimeLagPolicy(self.allowed_lag_ms)
        return LimitingLagPolicy(self.allowed_lag_ms)


class WatermarkPolicy:
    """Jet's WatermarkPolicy: watches the timestamps of one partition and says its watermark."""

    def report_event(self, timestamp: int) -> None:
        """An event with ``timestamp`` (the highest of a chunk is enough) was seen."""

    def current_watermark(self, now_ms: int) -> int:
        """The partition's watermark now; ``MIN_TIMESTAMP`` when there is none yet."""
        raise NotImplementedError


class LimitingLagPolicy(WatermarkPolicy):
    """Jet's limitingLag: watermark = highest timestamp seen - ``lag_ms``."""

    __slots__ = ("lag_ms", "_watermark")

    def __init__(self, lag_ms: int) -> None:
        self.lag_ms = lag_ms
        self._watermark = MIN_TIMESTAMP

    def report_event(self, timestamp: int) -> None:
        candidate = timestamp - self.lag_ms
        if candidate > self._watermark:  # also skips timestamps that would underflow
            self._watermark = candidate

    def current_watermark(self, now_ms: int) -> int:
        return self._watermark


class LimitingRealTimeLagPolicy(WatermarkPolicy):
    """Jet's limitingRealTimeLag (ingestion time): watermark = wall clock - ``lag_ms``."""

    __slots__ = ("lag_ms",)

    def __init__(self, lag_ms: int) -> None:
        self.lag_ms = lag_ms

    def current_watermark(self, now_ms: int) -> int:
        return now_ms - self.lag_ms


class EventTimeMapper:
    """Stamps chunks of a source's items and decides its watermarks (Jet's EventTimeMapper).

    One watermark policy, watermark and idle deadline per source partition (none at first:
    call :meth:`add_partitions`). The emitted watermark is the minimum over the partitions
    that are not idle, floored to the throttling frame, and never goes back. When every
    partition has gone idle it emits the highest watermark seen, then ``IDLE_MESSAGE``, once.
    """

    def __init__(self, policy: EventTimePolicy) -> None:
        self._policy = policy
        self._timestamp_fn = policy.timestamp_fn
        self._ingestion = policy.ingestion
        self._idle_timeout_ms = policy.idle_timeout_ms
        self._throttling = (SlidingWindowPolicy(policy.frame_size_ms, policy.frame_offset_ms,
                                                policy.frame_size_ms)
                            if policy.frame_size_ms else None)
        self._wm_policies: list[WatermarkPolicy] = []
        self._watermarks: list[int] = []
        self._idle_at_ms: list[int] = []
        self.last_emitted_wm = MIN_TIMESTAMP
        self.top_observed_wm = MIN_TIMESTAMP
        self._all_are_idle = False

    @property
    def partition_count(self) -> int:
        return len(self._watermarks)

    def add_partitions(self, count: int, now_ms: int | None = None) -> None:
        """Add ``count`` partitions; they hold the watermark back until they see events or go idle."""
        if not isinstance(count, int) or count < 0:
            raise ValueError(f"EventTimeMapper.add_partitions: count must be an int >= 0, got {count!r}")
        deadline = (wall_clock_ms() if now_ms is None else now_ms) + self._idle_timeout_ms
        for _ in range(count):
            self._wm_policies.append(self._policy.new_watermark_policy())
            self._watermarks.append(MIN_TIMESTAMP)
            self._idle_at_ms.append(deadline)

    def get_watermark(self, partition: int) -> int:
        """The watermark of ``partition`` (Jet's name)."""
        return self._watermarks[partition]

    def restore_watermark(self, partition: int, watermark: int) -> None:
        """After a restore: ``partition`` starts at ``watermark`` (never lower than it is)."""
        if watermark > self._watermarks[partition]:
            self._watermarks[partition] = watermark
        if watermark > self.top_observed_wm:
            self.top_observed_wm = watermark

    def watermark_state(self) -> tuple[list[int], int]:
        """What a source saves in a snapshot: each partition's watermark and the last emitted one."""
        return list(self._watermarks), self.last_emitted_wm

    def restore_watermark_states(self, states: Sequence[tuple[Sequence[int], int]]) -> None:
        """Restore from the :meth:`watermark_state` of every processor that saved one: partition
        i starts at the minimum saved for partition i, and nothing up to the minimum of the last
        emitted ones is emitted again, so no watermark goes below what downstream already saw."""
        if not states:
            return
        for partition in range(len(self._watermarks)):
            saved = [watermarks[partition] for watermarks, _ in states if partition < len(watermarks)]
            if saved:
                self.restore_watermark(partition, min(saved))
        last_emitted = min(last for _, last in states)
        if last_emitted > self.last_emitted_wm:
            self.last_emitted_wm = last_emitted

    def map_chunk(self, items: list, partition: int, now_ms: int,
                  timestamps: Sequence[int] | None = None) -> tuple[list, Watermark | None]:
        """Stamp ``items`` of ``partition``: the pairs, and the watermark to emit after them.

        ``timestamps`` are the source's native timestamps, used when the policy has neither a
        timestamp function nor ingestion time. An empty chunk gives ``([], None)``; a source
        with nothing to emit calls :meth:`on_idle` instead.
        """
        if not items:
            return [], None
        if not 0 <= partition < len(self._watermarks):
            raise ValueError(f"EventTimeMapper.map_chunk: partition {partition} out of range"
                             f" [0, {len(self._watermarks)}); call add_partitions() first")
        if self._ingestion:
            timestamps = [now_ms] * len(items)
        elif self._timestamp_fn is not None:
            timestamps = list(map(self._timestamp_fn, items))
        elif timestamps is None:
            raise ValueError("EventTimeMapper: the policy has no timestamp_fn and the source gave"
                             " no native timestamps")
        elif len(timestamps) != len(items):
            raise ValueError(f"EventTimeMapper.map_chunk: {len(timestamps)} timestamps for"
                             f" {len(items)} items")
        pairs = list(zip(timestamps, items))
        top = max(timestamps)
        self._wm_policies[partition].report_event(top)
        if self._idle_timeout_ms:
            self._idle_at_ms[partition] = now_ms + self._idle_timeout_ms
        self._all_are_idle = False
        emitted = self._recompute(now_ms, top)
        return pairs, (emitted[0] if emitted else None)

    def on_idle(self, now_ms: int) -> list[Watermark]:
        """No events now: the watermarks due (possibly ``[wm, IDLE_MESSAGE]``), or ``[]``."""
        return self._recompute(now_ms, MAX_TIMESTAMP)

    def _recompute(self, now_ms: int, cap: int) -> list[Watermark]:
        watermarks = self._watermarks
        idle_timeout = self._idle_timeout_ms
        lowest = MAX_TIMESTAMP
        for i, policy in enumerate(self._wm_policies):
            if idle_timeout and self._idle_at_ms[i] <= now_ms:
                continue
            candidate = policy.current_watermark(now_ms)
            if candidate > cap:
                candidate = cap  # a wall-clock policy must not make the event itself late
            if candidate > watermarks[i]:
                watermarks[i] = candidate
            wm = watermarks[i]
            if wm > self.top_observed_wm:
                self.top_observed_wm = wm
            if wm < lowest:
                lowest = wm
        if lowest == MAX_TIMESTAMP:
            if self._all_are_idle:
                return []
            lowest = self.top_observed_wm  # just went all idle: forward the top wm first
            self._all_are_idle = True
        else:
            self._all_are_idle = False
        emitted: list[Watermark] = []
        if lowest > self.last_emitted_wm:
            throttling = self._throttling
            new_wm = throttling.floor_frame_ts(lowest) if throttling is not None else MIN_TIMESTAMP
            if new_wm > self.last_emitted_wm:
                emitted.append(Watermark(new_wm))
                self.last_emitted_wm = new_wm
        if self._all_are_idle:
            emitted.append(IDLE_MESSAGE)
        return emitted
