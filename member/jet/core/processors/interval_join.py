"""An interval join of two keyed streams (Flink's ``intervalJoin``, Bytewax's join in a window
around each event): a left item ``a`` and a right item ``b`` of the same key join when
``a.ts - lower_ms <= b.ts <= a.ts + upper_ms``.

Per key the processor buffers the items of both sides, each side sorted by timestamp (parallel
lists of timestamps and items: the interval is found by bisection, and eviction cuts a prefix).
An arriving item is joined with the other side's buffered items in its interval, then buffered
itself, so each
pair is emitted once, by whichever of the two came second, as ``(max(a.ts, b.ts),
mapper(a, b))`` (None results are dropped). Items behind the watermark are late: dropped and
counted, as every event-time processor does. That is what lets the watermark ``wm`` evict: no
right item below ``wm`` can come, so a left item with ``ts + upper_ms < wm`` can match nothing
more, and a right item with ``ts + lower_ms < wm`` neither. The buffers hold what the interval
and the watermark's lag need, never the whole stream.

Snapshots: per key ``(lefts, rights)`` under the key (the vertex's partitioned inputs route by
it, so a restore on another member count reaches the key's new owner); a key restored twice is
concatenated. The watermark per processor, restored as the minimum over all.

**A broadcast side** (``broadcast_ordinal``): the planner sends one side, small enough to hold
everywhere, to every processor on every member, and keeps the other on the member that produced
it, partitioned by key among that member's processors, so the large side never crosses members.
Each item of the partitioned side is on one processor and meets every broadcast item there, so
each pair is still emitted once. Each processor saves its copy of the broadcast side under
``BroadcastKey(("broadcast-side", global index, key))``; a restore keeps the copy of the processor
whose saved watermark was lowest, which evicted and dropped the least and so holds every item any
other copy holds.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Callable, Iterator

from jet.core.inbox import Inbox
from jet.core.processors.base import Supplier
from jet.core.processors.snapshot_state import tagged
from jet.core.processors.streaming import StreamingProcessor
from jet.core.snapshot_keys import BroadcastKey
from jet.core.special_items import MIN_TIMESTAMP, Watermark

LEFT, RIGHT = 0, 1
_BROADCAST_SIDE = "broadcast-side"


class _Side:
    """One side's buffered items of one key, sorted by timestamp."""

    __slots__ = ("stamps", "items")

    def __init__(self) -> None:
        self.stamps: list[int] = []
        self.items: list = []

    def add(self, ts: int, item: Any) -> None:
        stamps = self.stamps
        if not stamps or ts >= stamps[-1]:  # the usual case: in order
            stamps.append(ts)
            self.items.append(item)
        else:
            at = bisect_right(stamps, ts)
            stamps.insert(at, ts)
            self.items.insert(at, item)

    def evict_below(self, limit: int) -> None:
        cut = bisect_left(self.stamps, limit)
        if cut:
            del self.stamps[:cut], self.items[:cut]

    def pairs(self) -> list[tuple[int, Any]]:
        return list(zip(self.stamps, self.items))


class IntervalJoinP(StreamingProcessor):
    """Joins ordinal 0 (left) with ordinal 1 (right) per key; emits ``(ts, result)`` pairs."""

    def __init__(self, left_key_fn: Callable[[Any], Any], right_key_fn: Callable[[Any], Any],
                 lower_ms: int, upper_ms: int, mapper: Callable[[Any, Any], Any],
                 broadcast_ordinal: int | None = None) -> None:
        self._key_fns = (left_key_fn, right_key_fn)
        self._broadcast = broadcast_ordinal
        self._lower = lower_ms
        self._upper = upper_ms
        self._mapper = mapper
        self.buffers: dict[Any, tuple[_Side, _Side]] = {}
        self.current_watermark = MIN_TIMESTAMP
        self.late_events_dropped = 0
        self._restored_copies: dict[int, list] = {}
        """A broadcast side's saved copies by the saving processor's global index, until the
        restore ends."""
        self._restored_watermarks: dict[int, int] = {}

    @property
    def buffered(self) -> int:
        """Items held in the buffers of every key."""
        return sum(len(lefts.stamps) + len(rights.stamps) for lefts, rights in self.buffers.values())

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self.emit_unfinished():
            return  # the inbox waits until the previous chunk's joins are out
        pairs = inbox.take_chunk()
        watermark, key_fn, mapper = self.current_watermark, self._key_fns[ordinal], self._mapper
        left, other_side = ordinal == LEFT, 1 - ordinal
        # The other side's timestamps that match ts: [ts + low, ts + high].
        low, high = (-self._lower, self._upper) if left else (-self._upper, self._lower)
        buffers, output, late = self.buffers, [], 0
        get_sides, append = buffers.get, output.append
        # _Side.between and _Side.add inlined: this loop runs once per event.
        for ts, item in pairs:
            if ts < watermark:
                late += 1
                continue
            key = key_fn(item)
            sides = get_sides(key)
            if sides is None:
                sides = buffers[key] = (_Side(), _Side())
            else:
                other = sides[other_side]
                stamps = other.stamps
                if stamps:
                    start = bisect_left(stamps, ts + low)
                    stop = bisect_right(stamps, ts + high, start)
                    if start < stop:
                        for other_ts, other_item in zip(stamps[start:stop], other.items[start:stop]):
                            result = mapper(item, other_item) if left else mapper(other_item, item)
                            if result is not None:
                                append((ts if ts > other_ts else other_ts, result))
            mine = sides[ordinal]
            stamps = mine.stamps
            if stamps and ts >= stamps[-1]:  # the usual case, in order, without a call
                stamps.append(ts)
                mine.items.append(item)
            else:
                mine.add(ts, item)
        if late:
            self.drop_late(late, watermark)
        if output:
            self.start_emitting(output)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.current_watermark = watermark.timestamp
        self._evict(watermark.timestamp)  # again on a retry: nothing more to evict then
        return self.emit_then_forward(watermark, list)

    def _evict(self, watermark: int) -> None:
        left_limit, right_limit = watermark - self._upper, watermark - self._lower
        emptied = []
        # evict_below inlined, and called only where the oldest item is out: this walks every
        # key at every watermark
        for key, (lefts, rights) in self.buffers.items():
            left_stamps, right_stamps = lefts.stamps, rights.stamps
            if left_stamps and left_stamps[0] < left_limit:
                lefts.evict_below(left_limit)
            if right_stamps and right_stamps[0] < right_limit:
                rights.evict_below(right_limit)
            if not left_stamps and not right_stamps:
                emptied.append(key)
        for key in emptied:
            del self.buffers[key]

    def complete(self) -> bool:
        return self.emit_unfinished()

    # -- snapshots -------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        return self.save_state(self._saved_entries, self.current_watermark)

    def _saved_entries(self) -> Iterator[tuple[Any, Any]]:
        broadcast = self._broadcast
        if broadcast is None:
            for key, (lefts, rights) in self.buffers.items():
                yield key, (lefts.pairs(), rights.pairs())
            return
        index = self.context.global_index
        for key, sides in self.buffers.items():
            copy, partitioned = sides[broadcast], sides[1 - broadcast]
            if partitioned.stamps:
                yield key, ([], partitioned.pairs()) if broadcast == LEFT else (partitioned.pairs(), [])
            if copy.stamps:
                yield BroadcastKey((_BROADCAST_SIDE, index, key)), copy.pairs()

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, value in inbox.take_chunk():
            index = tagged(key, "progress")
            if index is not None:
                self.merge_restored_progress(value)
                self._restored_watermarks[index] = value[0]
            elif type(key) is BroadcastKey and type(key.key) is tuple and key.key[0] == _BROADCAST_SIDE:
                _, index, item_key = key.key
                self._restored_copies.setdefault(index, []).append((item_key, value))
            else:
                self._restore_key(key, value)

    def _restore_key(self, key: Any, value: tuple) -> None:
        sides = self.buffers.get(key)
        if sides is None:
            sides = self.buffers[key] = (_Side(), _Side())
        for side, saved in zip(sides, value):
            for ts, item in saved:
                side.add(ts, item)

    def finish_snapshot_restore(self) -> bool:
        if self.restored_progress is not None:
            (self.current_watermark,) = self.restored_progress
        if self._broadcast is not None and self._restored_watermarks:
            fullest = min(self._restored_watermarks, key=self._restored_watermarks.__getitem__)
            for key, pairs in self._restored_copies.get(fullest, ()):
                self._restore_key(key, (pairs, []) if self._broadcast == LEFT else ([], pairs))
        self._restored_copies, self._restored_watermarks = {}, {}
        return True


def interval_join_p(left_key_fn: Callable[[Any], Any], right_key_fn: Callable[[Any], Any],
                    lower_ms: int, upper_ms: int, mapper: Callable[[Any, Any], Any],
                    broadcast_ordinal: int | None = None) -> Supplier:
    """An interval join: ``(ts, item)`` pairs on ordinal 0 (left) and 1 (right), each partitioned
    by its key function; ``(ts, mapper(left, right))`` pairs out for ``right.ts`` in
    ``[left.ts - lower_ms, left.ts + upper_ms]``. ``broadcast_ordinal``: the side that reaches
    every processor (the other is partitioned among one member's processors; see the module
    docstring), or None."""
    where = "interval_join_p"
    for name, fn in (("left_key_fn", left_key_fn), ("right_key_fn", right_key_fn), ("mapper", mapper)):
        if not callable(fn):
            raise TypeError(f"{where}: {name} must be callable, got {fn!r}")
    for name, value in (("lower_ms", lower_ms), ("upper_ms", upper_ms)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{where}: {name} must be an int (ms), got {value!r}")
    if lower_ms + upper_ms < 0:
        raise ValueError(f"{where}: the interval [-{lower_ms}, +{upper_ms}] ms is empty")
    if broadcast_ordinal not in (None, LEFT, RIGHT):
        raise ValueError(f"{where}: broadcast_ordinal must be 0 (left), 1 (right) or None, got {broadcast_ordinal!r}")
    return lambda: IntervalJoinP(left_key_fn, right_key_fn, lower_ms, upper_ms, mapper, broadcast_ordinal)
