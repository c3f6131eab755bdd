"""Jet's SlidingWindowP: tumbling and sliding windows, in two stages or in one.

State (as in Jet): ``frames`` maps a frame end to ``{key: accumulator}``; ``next_win_to_emit``
is the end of the next window to emit (MIN until the first watermark); ``top_ts`` the highest
frame seen; with a ``deduct`` function a running window holds the sum of the frames of the
window just emitted, minus the one that left.

An event belongs to the frame ``higher_frame_ts(ts)``; it is late, dropped and counted, when
that frame is below ``next_win_to_emit`` (which also rejects "partially late" events of frames
that already fed an emitted window). A watermark ``wm`` emits every window with end <= wm,
evicts the frames no later window needs, forwards ``wm`` and sets ``next_win_to_emit =
higher_frame_ts(wm)``. Only windows holding data are visited, so a watermark far ahead costs
nothing per empty frame. Results come out by window end, keys in order of first appearance.

Snapshots: per key its frames, ``key -> {frame end: accumulator}`` (a key restored twice is
combined frame by frame); an unkeyed first stage saves them per processor (the index ``saved %
total`` restores them), an unkeyed last stage under the vertex's name (it is one processor fed
through ``all_to_one``); ``next_win_to_emit`` and the watermark go under a BroadcastKey per
processor and are restored as the minimum over all processors, as in Jet. The running window
of ``deduct`` is recomputed from the frames; early-results timing starts afresh.

The hot path folds a whole chunk per frame: a chunk whose events all fall in one frame (the
usual case) is one call of the operation's chunk fold (``collections.Counter``'s C helper for
counting); a chunk straddling frames is split per frame with C-level ``compress``.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any, Callable, Iterator

from jet.core.aggregate import AggregateOperation, identity
from jet.core.inbox import Inbox
from jet.core.processors.base import LazyOutput, Supplier
from jet.core.processors.snapshot_state import (global_key, is_own_share, merge_keyed, own_key, tagged,
                                                unexpected_entry)
from jet.core.processors.streaming import StreamingProcessor, monotonic_ms
from jet.core.sliding_window_policy import SlidingWindowPolicy
from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark
from jet.core.window_results import KeyedWindowResult, WindowResult

_MISSING = object()
_timestamp_of = itemgetter(0)
_item_of = itemgetter(1)
_new_tuple = tuple.__new__

#: What a processor does with its input and output.
ACCUMULATE_BY_FRAME = "accumulate-by-frame"  # pairs in, (key, frame end, acc) partials out (stage 1)
COMBINE_TO_WINDOW = "combine-to-window"      # stage one's partials in, window pairs out (stage 2)
AGGREGATE_TO_WINDOW = "aggregate-to-window"  # pairs in, window pairs out (single stage)


class SlidingWindowP(StreamingProcessor):
    """One class for the three sliding-window processors (Jet's SlidingWindowP)."""

    def __init__(self, kind: str, key_fn: Callable[[Any], Any] | None,
                 window_policy: SlidingWindowPolicy, aggregate: AggregateOperation,
                 keyed: bool, early_results_period_ms: int = 0,
                 clock_ms: Callable[[], int] = monotonic_ms) -> None:
        self._kind = kind
        self._key_fn = key_fn
        self._policy = (window_policy.to_tumbling_by_frame() if kind == ACCUMULATE_BY_FRAME
                        else window_policy)
        self._aggregate = aggregate
        self._keyed = keyed
        self._early_period_ms = early_results_period_ms
        self._clock_ms = clock_ms
        self._deduct = None if self._policy.is_tumbling() else aggregate.deduct
        self.frames: dict[int, dict] = {}
        self.next_win_to_emit = MIN_TIMESTAMP
        self.current_watermark = MIN_TIMESTAMP
        self.top_ts = MIN_TIMESTAMP
        self._running: dict | None = None
        self.late_events_dropped = 0

    # -- input ------------------------------------------------------------------------------
    def process(self, ordinal: int, inbox: Inbox) -> None:
        chunk = inbox.take_chunk()
        if not chunk:
            return
        if self._kind == COMBINE_TO_WINDOW:
            self._combine_frames(chunk)
        else:
            self._accumulate_pairs(chunk)

    def _accumulate_pairs(self, pairs: list) -> None:
        # Not zip(*pairs): its per-pair iterators are GC-tracked and trigger collections.
        # A chunk holds few distinct timestamps (a source stamps runs of events alike), so the
        # set is small and its min and max cost far less than two passes over the chunk.
        distinct = set(map(_timestamp_of, pairs))
        items = list(map(_item_of, pairs))
        policy = self._policy
        size, offset = policy.frame_size, policy.frame_offset
        lowest, highest = min(distinct), max(distinct)
        frame = policy.higher_frame_ts(lowest)
        if frame == policy.higher_frame_ts(highest):
            if frame < self.next_win_to_emit:
                self.drop_late(len(items), self.current_watermark)
            else:
                self._fold(frame, items)
            return
        timestamps = list(map(_timestamp_of, pairs))
        if lowest - size > MIN_TIMESTAMP and highest + size < MAX_TIMESTAMP:
            frames = [t - (t - offset) % size + size for t in timestamps]
        else:  # near the int64 bounds: clamp as Java does
            frames = list(map(policy.higher_frame_ts, timestamps))
        late = 0
        for frame in sorted(set(frames)):
            frame_items = list(compress(items, map(frame.__eq__, frames)))
            if frame < self.next_win_to_emit:
                late += len(frame_items)
            else:
                self._fold(frame, frame_items)
        if late:
            self.drop_late(late, self.current_watermark)

    def _fold(self, frame: int, items: list) -> None:
        """Fold the items of one frame (not late) into it."""
        accumulators = self.frames.get(frame)
        if accumulators is None:
            accumulators = self.frames[frame] = {}
            if frame > self.top_ts:
                self.top_ts = frame
        aggregate = self._aggregate
        if self._keyed:
            aggregate.fold_keyed_chunk(accumulators, self._key_fn, items)
        else:
            acc = accumulators.get(None, _MISSING)
            accumulators[None] = aggregate.fold_chunk(
                aggregate.create() if acc is _MISSING else acc, items)

    def _combine_frames(self, partials: list) -> None:
        """Merge stage one's ``(key, frame end, accumulator)`` partials into the frames."""
        higher_frame_ts, combine = self._policy.higher_frame_ts, self._aggregate.combine
        frames, next_win_to_emit = self.frames, self.next_win_to_emit
        late = 0
        end = None
        accumulators: dict | None = None
        for key, frame_end, partial in partials:
            if frame_end != end:  # a chunk holds runs of one frame: look the frame up per run
                end = frame_end
                frame = higher_frame_ts(frame_end - 1)
                if frame < next_win_to_emit:
                    accumulators = None
                else:
                    accumulators = frames.get(frame)
                    if accumulators is None:
                        accumulators = frames[frame] = {}
                        if frame > self.top_ts:
                            self.top_ts = frame
            if accumulators is None:
                late += 1
                continue
            acc = accumulators.get(key, _MISSING)
            # A partial is the receiver's own (stage one forgot it), so it is kept, not copied.
            accumulators[key] = partial if acc is _MISSING else combine(acc, partial)
        if late:
            self.drop_late(late, self.current_watermark)

    # -- snapshots -------------------------------------------------------------------------
    def _snapshot_key(self, key: Any) -> Any:
        if self._keyed:
            return key
        if self._kind == ACCUMULATE_BY_FRAME:
            return own_key("frames", self.context)
        return global_key(self.context)

    def save_to_snapshot(self) -> bool:
        return self.save_state(self._saved_entries, self.next_win_to_emit, self.current_watermark)

    def _saved_entries(self) -> Iterator[tuple[Any, dict]]:
        """``key -> {frame end: accumulator}`` per key, keys in order of first appearance; lazily,
        one key at a time, so a save in portions costs no pass over the whole state at once."""
        ends = list(self.frames)
        maps = [self.frames[end] for end in ends]
        if len(maps) == 1 and self._keyed:  # one frame (a tumbling window): no Python step per key
            yield from zip(maps[0].keys(), map(dict.fromkeys, repeat(ends[:1]), maps[0].values()))
            return
        snapshot_key = self._snapshot_key
        for i, accumulators in enumerate(maps):
            earlier, later = maps[:i], list(zip(ends[i + 1:], maps[i + 1:]))
            for key, acc in accumulators.items():
                if earlier and any(key in m for m in earlier):
                    continue  # saved with the first frame that holds it
                value = {ends[i]: acc}
                for end, m in later:
                    other = m.get(key, _MISSING)
                    if other is not _MISSING:
                        value[end] = other
                yield snapshot_key(key), value

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context, aggregate = self.context, self._aggregate
        for key, value in inbox.take_chunk():
            if tagged(key, "progress") is not None:
                self.merge_restored_progress(value)
                continue
            if not self._keyed:
                saved_index = tagged(key, "frames")
                if saved_index is not None:
                    if not is_own_share(saved_index, context):
                        continue
                elif key != global_key(context):
                    raise unexpected_entry(context.vertex_name, self, key)
                key = None
            for frame, acc in value.items():
                accumulators = self.frames.get(frame)
                if accumulators is None:
                    accumulators = self.frames[frame] = {}
                    if frame > self.top_ts:
                        self.top_ts = frame
                merge_keyed(accumulators, key, acc, aggregate, context.vertex_name)

    def finish_snapshot_restore(self) -> bool:
        if self.restored_progress is not None:
            self.next_win_to_emit, self.current_watermark = self.restored_progress
        return True

    # -- output ----------------------------------------------------------------------------
    def try_process_watermark(self, watermark: Watermark) -> bool:
        if not self.emit_then_forward(watermark, lambda: self._close_windows(watermark.timestamp)):
            return False
        self.next_win_to_emit = self._policy.higher_frame_ts(watermark.timestamp)
        self.current_watermark = watermark.timestamp
        return True

    def complete(self) -> bool:
        policy = self._policy
        return self.emit_final(lambda: self._close_windows(
            min(MAX_TIMESTAMP, self.top_ts + policy.window_size - policy.frame_size)))

    def try_process(self) -> bool:
        if not self._early_period_ms or not self.emit_unfinished() or not self.frames:
            return self._unfinished is None
        if not self.early_results_due(self._early_period_ms, self._clock_ms):
            return True
        return self.start_emitting(self._early_windows())

    def _window_ends(self, limit: int) -> list[int]:
        """Ends of the windows holding data, from ``next_win_to_emit`` to ``limit``, ascending."""
        policy = self._policy
        step, reach = policy.frame_size, policy.window_size - policy.frame_size
        ends: list[int] = []
        # Frames stay until their last window is out, so the lowest may be below this.
        covered = self.next_win_to_emit - step  # the highest end not to list again
        for frame in sorted(self.frames):
            if frame > limit:
                break
            start = max(frame, covered + step)
            stop = min(frame + reach, limit)
            if start <= stop:
                ends.extend(range(start, stop + 1, step))
                covered = ends[-1]
        return ends

    def _recompute(self, end: int) -> dict:
        """The accumulators of the window ending at ``end``, combined afresh from its frames."""
        policy = self._policy
        combine, create = self._aggregate.combine, self._aggregate.create
        window: dict = {}
        get = self.frames.get
        for frame in range(end - policy.window_size + policy.frame_size, end + 1, policy.frame_size):
            for key, acc in get(frame, {}).items():
                current = window.get(key, _MISSING)
                window[key] = combine(create() if current is _MISSING else current, acc)
        return window

    def _close_windows(self, limit: int) -> "list | LazyOutput":
        """The results of every window with end <= ``limit``; evicts the frames they free.

        A tumbling window's frame leaves the state as it closes, so its results are made as
        the outbox takes them (:class:`LazyOutput`); a sliding window's come from state that
        changes next, so they are made at once."""
        policy = self._policy
        frames = self.frames
        if policy.is_tumbling():
            closing = [(end, frames.pop(end, None) or {}) for end in self._window_ends(limit)]
            return LazyOutput(chain.from_iterable(self._results_of(end, window, False) for end, window in closing))
        output: list = []
        for end in self._window_ends(limit):
            leaving = end - policy.window_size + policy.frame_size
            if self._deduct is not None:
                self._append_results(output, end, self._add_leading_frame(end), False)
                self._deduct_frame(frames.pop(leaving, None))
            else:
                self._append_results(output, end, self._recompute(end), False)
                frames.pop(leaving, None)
        return output

    def _add_leading_frame(self, end: int) -> dict:
        """The running window, moved on to the window ending at ``end``."""
        running = self._running
        if running is None:
            running = self._running = self._recompute(end)
            return running
        combine, create = self._aggregate.combine, self._aggregate.create
        for key, acc in self.frames.get(end, {}).items():
            current = running.get(key, _MISSING)
            running[key] = combine(create() if current is _MISSING else current, acc)
        return running

    def _deduct_frame(self, leaving: dict | None) -> None:
        """Take the frame that left out of the running window, dropping emptied accumulators."""
        if not leaving:
            return
        running, deduct, empty = self._running, self._aggregate.deduct, self._aggregate.create()
        for key, acc in leaving.items():
            remaining = deduct(running[key], acc)
            if remaining == empty:
                del running[key]
            else:
                running[key] = remaining

    def _early_windows(self) -> list:
        """Early results of every window from the next one up to the highest frame's last one."""
        policy = self._policy
        limit = min(MAX_TIMESTAMP, self.top_ts + policy.window_size - policy.frame_size)
        output: list = []
        for end in self._window_ends(limit):
            window = self.frames.get(end, {}) if policy.is_tumbling() else self._recompute(end)
            self._append_results(output, end, window, True)
        return output

    def _append_results(self, output: list, end: int, window: dict, is_early: bool) -> None:
        output.extend(self._results_of(end, window, is_early))

    def _results_of(self, end: int, window: dict, is_early: bool) -> Iterator:
        # Built by C-level zip/map: a namedtuple's own __new__ is a Python call per key.
        if self._kind == ACCUMULATE_BY_FRAME:
            return zip(window.keys(), repeat(end), window.values())
        start = end - self._policy.window_size
        finish = self._aggregate.export_fn if is_early else self._aggregate.finish
        results = window.values() if finish is identity else map(finish, window.values())
        if self._keyed:
            fields = zip(repeat(start), repeat(end), window.keys(), results, repeat(is_early))
            cls = KeyedWindowResult
        else:
            fields = zip(repeat(start), repeat(end), results, repeat(is_early))
            cls = WindowResult
        return zip(repeat(end - 1), map(_new_tuple, repeat(cls), fields))


def _check(where: str, window_policy: Any, aggregate: Any, needs_combine: bool) -> None:
    if not isinstance(window_policy, SlidingWindowPolicy):
        raise TypeError(f"{where}: window_policy must be a SlidingWindowPolicy, got {window_policy!r}")
    if not isinstance(aggregate, AggregateOperation):
        raise TypeError(f"{where}: aggregate must be an AggregateOperation, got {aggregate!r}")
    if needs_combine and aggregate.combine is None:
        raise ValueError(f"{where}: aggregate {aggregate.name!r} has no combine function, which"
                         " this window needs (two stages, or a sliding window)")


def _check_key_fn(where: str, key_fn: Any) -> None:
    if key_fn is not None and not callable(key_fn):
        raise TypeError(f"{where}: key_fn must be callable or None, got {key_fn!r}")


def accumulate_by_frame_p(key_fn: Callable[[Any], Any] | None, window_policy: SlidingWindowPolicy,
                          aggregate: AggregateOperation) -> Supplier:
    """Stage one: ``(ts, item)`` pairs in, a bare ``(key, frame end, accumulator)`` tuple
    (``window_results.FramePartial``) per (frame, key) out once the watermark passes the frame
    (key None without ``key_fn``); partition them by ``window_results.partial_key``."""
    _check("accumulate_by_frame_p", window_policy, aggregate, needs_combine=False)
    _check_key_fn("accumulate_by_frame_p", key_fn)
    return lambda: SlidingWindowP(ACCUMULATE_BY_FRAME, key_fn, window_policy, aggregate,
                                  keyed=key_fn is not None)


def combine_to_sliding_window_p(window_policy: SlidingWindowPolicy, aggregate: AggregateOperation,
                                keyed: bool = True) -> Supplier:
    """Stage two: stage one's ``(key, frame end, accumulator)`` partials in (it keeps them: an
    operation's ``combine`` may change its left argument), ``(end - 1, KeyedWindowResult)``
    pairs out (``(end - 1, WindowResult)`` when not ``keyed``)."""
    _check("combine_to_sliding_window_p", window_policy, aggregate, needs_combine=True)
    return lambda: SlidingWindowP(COMBINE_TO_WINDOW, None, window_policy, aggregate, keyed=keyed)


def aggregate_to_sliding_window_p(key_fn: Callable[[Any], Any] | None,
                                  window_policy: SlidingWindowPolicy, aggregate: AggregateOperation,
                                  early_results_period_ms: int = 0,
                                  clock_ms: Callable[[], int] = monotonic_ms) -> Supplier:
    """Single stage: ``(ts, item)`` pairs in, window result pairs out; with
    ``early_results_period_ms`` > 0 also early results (``is_early=True``) every period of
    ``clock_ms`` (a monotonic clock in ms)."""
    where = "aggregate_to_sliding_window_p"
    _check(where, window_policy, aggregate, needs_combine=not window_policy.is_tumbling())
    _check_key_fn(where, key_fn)
    if not isinstance(early_results_period_ms, int) or early_results_period_ms < 0:
        raise ValueError(f"{where}: early_results_period_ms must be an int >= 0, got"
                         f" {early_results_period_ms!r}")
    return lambda: SlidingWindowP(AGGREGATE_TO_WINDOW, key_fn, window_policy, aggregate,
                                  keyed=key_fn is not None,
                                  early_results_period_ms=early_results_period_ms, clock_ms=clock_ms)
