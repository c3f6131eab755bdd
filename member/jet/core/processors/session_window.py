"""Jet's SessionWindowP: per-key windows that close after ``session_timeout_ms`` without events.

An event at ``t`` spans ``[t, t + timeout)``. Per key the processor keeps its open windows
sorted by start (parallel lists of starts, ends and accumulators); an event inside a window
is folded into it, one overlapping or touching a window extends it, one bridging several
merges them (windows that merely touch, end == start, merge too, so the result does not
depend on when the watermark comes). An event is late, dropped and counted, when ``t`` is
below the current watermark. A watermark closes every window whose end is below it, in
deadline order, and is then forwarded; ``complete()`` closes everything.

Deadlines (a heap of window ends, each with the keys due then) are kept lazily: an event that
extends a key's window leaves the key under the end it had, and when that deadline comes, a key
whose first window now ends later is moved to that end. So the usual event, one that extends
its key's only window, touches no deadline at all.

Snapshots: per key its open windows as ``key -> [(start, end, accumulator), ...]`` (the global
windows under the vertex's name: that stage is one processor fed through ``all_to_one``), and
the watermark per processor, restored as the minimum over all. A key's sessions live in one
processor, so a key restored twice is an error.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Any, Callable, Iterator

from jet.core.aggregate import AggregateOperation
from jet.core.inbox import Inbox
from jet.core.processors.base import Supplier
from jet.core.processors.snapshot_state import global_key, tagged, unexpected_entry
from jet.core.processors.streaming import StreamingProcessor, monotonic_ms
from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark
from jet.core.window_results import KeyedWindowResult, WindowResult


class _Windows:
    """The open windows of one key, sorted by start and never overlapping."""

    __slots__ = ("starts", "ends", "accs")

    def __init__(self, starts: list[int], ends: list[int], accs: list[Any]) -> None:
        self.starts = starts
        self.ends = ends
        self.accs = accs


class SessionWindowP(StreamingProcessor):
    """Session windows per key (or one global key), emitting ``(end - 1, result)`` pairs."""

    def __init__(self, session_timeout_ms: int, key_fn: Callable[[Any], Any] | None,
                 aggregate: AggregateOperation, early_results_period_ms: int = 0,
                 clock_ms: Callable[[], int] = monotonic_ms) -> None:
        self._timeout = session_timeout_ms
        self._key_fn = key_fn
        self._aggregate = aggregate
        self._early_period_ms = early_results_period_ms
        self._clock_ms = clock_ms
        self.windows: dict[Any, _Windows] = {}
        self._deadline_keys: dict[int, dict] = {}  # window end -> keys with a window ending there
        self._deadlines: list[int] = []              # heap of the ends in _deadline_keys
        self.current_watermark = MIN_TIMESTAMP
        self.late_events_dropped = 0

    # -- input ------------------------------------------------------------------------------
    def process(self, ordinal: int, inbox: Inbox) -> None:
        # The usual events open a key's first window or fall into or extend its only one: they
        # are handled here with every lookup hoisted out of the loop; the rest by _add_event.
        pairs = inbox.take_chunk()
        watermark, key_fn, timeout = self.current_watermark, self._key_fn, self._timeout
        windows_of = self.windows
        get_windows = windows_of.get
        accumulate, create = self._aggregate.accumulate, self._aggregate.create
        deadline_keys, deadlines = self._deadline_keys, self._deadlines
        get_keys = deadline_keys.get
        unclamped = MAX_TIMESTAMP - timeout  # the highest ts whose ts + timeout fits
        late = 0
        for ts, item in pairs:
            if ts < watermark:
                late += 1
                continue
            key = None if key_fn is None else key_fn(item)
            event_end = ts + timeout if ts <= unclamped else MAX_TIMESTAMP
            windows = get_windows(key)
            if windows is None:
                windows_of[key] = _Windows([ts], [event_end], [accumulate(create(), item)])
            else:
                ends = windows.ends
                if len(ends) != 1 or ends[0] < ts or windows.starts[0] > event_end:
                    self._add_event(key, ts, item)
                    continue
                accs = windows.accs
                accs[0] = accumulate(accs[0], item)
                if ts < windows.starts[0]:
                    windows.starts[0] = ts
                if event_end > ends[0]:
                    ends[0] = event_end  # its deadline stays where it was (see _close_windows)
                continue
            keys = get_keys(event_end)
            if keys is None:
                keys = deadline_keys[event_end] = {}
                heapq.heappush(deadlines, event_end)
            keys[key] = None
        if late:
            self.drop_late(late, watermark)

    def _add_event(self, key: Any, ts: int, item: Any) -> None:
        """Fold an event into the windows ``key`` has: a new one, or merged with those it touches."""
        windows = self.windows[key]
        starts, ends, accs = windows.starts, windows.ends, windows.accs
        event_end = min(MAX_TIMESTAMP, ts + self._timeout)
        # The windows touching [ts, event_end]: end >= ts and start <= event_end.
        first = bisect_left(ends, ts)
        last = first
        while last < len(starts) and starts[last] <= event_end:
            last += 1
        aggregate = self._aggregate
        if first == last:
            starts.insert(first, ts)
            ends.insert(first, event_end)
            accs.insert(first, aggregate.accumulate(aggregate.create(), item))
            self._add_deadline(key, event_end)
            return
        acc = accs[first]
        for other in accs[first + 1:last]:
            acc = aggregate.combine(acc, other)
        new_end = max(ends[last - 1], event_end)
        for end in ends[first:last]:
            if end != new_end:
                self._remove_deadline(key, end)
        if ends[last - 1] != new_end:
            self._add_deadline(key, new_end)
        starts[first:last] = [min(starts[first], ts)]
        ends[first:last] = [new_end]
        accs[first:last] = [aggregate.accumulate(acc, item)]

    def _add_deadline(self, key: Any, end: int) -> None:
        keys = self._deadline_keys.get(end)
        if keys is None:
            keys = self._deadline_keys[end] = {}
            heapq.heappush(self._deadlines, end)
        keys[key] = None

    def _remove_deadline(self, key: Any, end: int) -> None:
        keys = self._deadline_keys.get(end)
        if keys is not None:
            keys.pop(key, None)  # an emptied entry stays until the watermark passes it

    # -- snapshots -------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        return self.save_state(self._saved_entries, self.current_watermark)

    def _saved_entries(self) -> Iterator[tuple[Any, list]]:
        keyed = self._key_fn is not None
        for key, windows in self.windows.items():
            yield (key if keyed else global_key(self.context),
                   list(zip(windows.starts, windows.ends, windows.accs)))

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context = self.context
        for key, sessions in inbox.take_chunk():
            if tagged(key, "progress") is not None:
                self.merge_restored_progress(sessions)
                continue
            if self._key_fn is None:
                if key != global_key(context):
                    raise unexpected_entry(context.vertex_name, self, key)
                key = None
            if key in self.windows:
                raise ValueError(f"vertex {context.vertex_name!r}: the snapshot holds the sessions of key"
                                 f" {key!r} twice")
            windows = self.windows[key] = _Windows([], [], [])
            for start, end, acc in sessions:
                windows.starts.append(start)
                windows.ends.append(end)
                windows.accs.append(acc)
                self._add_deadline(key, end)

    def finish_snapshot_restore(self) -> bool:
        if self.restored_progress is not None:
            (self.current_watermark,) = self.restored_progress
        return True

    # -- output ----------------------------------------------------------------------------
    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.current_watermark = watermark.timestamp
        return self.emit_then_forward(watermark, lambda: self._close_windows(watermark.timestamp))

    def complete(self) -> bool:
        return self.emit_final(lambda: self._close_windows(MAX_TIMESTAMP))

    def _close_windows(self, watermark: int) -> list:
        """Results of every window ending below ``watermark`` (everything for MAX), by deadline."""
        output: list = []
        deadlines, deadline_keys = self._deadlines, self._deadline_keys
        windows_of = self.windows
        while deadlines and (deadlines[0] < watermark or watermark == MAX_TIMESTAMP):
            deadline = heapq.heappop(deadlines)
            for key in deadline_keys.pop(deadline):
                windows = windows_of.get(key)
                if windows is None:
                    continue
                first_end = windows.ends[0]
                if first_end > deadline:  # extended since: it closes in its own end's turn
                    self._add_deadline(key, first_end)
                else:
                    self._close_key(key, watermark, output)
        return output

    def _close_key(self, key: Any, watermark: int, output: list) -> None:
        windows = self.windows.get(key)
        if windows is None:
            return
        ends = windows.ends
        closing = len(ends) if watermark == MAX_TIMESTAMP else bisect_left(ends, watermark)
        for start, end, acc in zip(windows.starts[:closing], ends[:closing], windows.accs[:closing]):
            self._remove_deadline(key, end)  # closed now, not when its own deadline comes
            self._append_result(output, key, start, end, self._aggregate.finish(acc), False)
        if closing == len(ends):
            del self.windows[key]
        else:
            del windows.starts[:closing], windows.ends[:closing], windows.accs[:closing]

    def _append_result(self, output: list, key: Any, start: int, end: int, result: Any,
                       is_early: bool) -> None:
        if result is None:
            return
        if self._key_fn is None:
            output.append((end - 1, WindowResult(start, end, result, is_early)))
        else:
            output.append((end - 1, KeyedWindowResult(start, end, key, result, is_early)))

    def try_process(self) -> bool:
        if not self._early_period_ms or not self.emit_unfinished() or not self.windows:
            return self._unfinished is None
        if not self.early_results_due(self._early_period_ms, self._clock_ms):
            return True
        export, output = self._aggregate.export_fn, []
        for key, windows in self.windows.items():
            for start, end, acc in zip(windows.starts, windows.ends, windows.accs):
                self._append_result(output, key, start, end, export(acc), True)
        return self.start_emitting(output)


def aggregate_to_session_window_p(session_timeout_ms: int, key_fn: Callable[[Any], Any] | None,
                                  aggregate: AggregateOperation, early_results_period_ms: int = 0,
                                  clock_ms: Callable[[], int] = monotonic_ms) -> Supplier:
    """Session windows: ``(ts, item)`` pairs in, ``(end - 1, KeyedWindowResult)`` pairs out
    (``WindowResult`` without ``key_fn``); early results every ``early_results_period_ms``."""
    where = "aggregate_to_session_window_p"
    if not isinstance(session_timeout_ms, int) or session_timeout_ms <= 0:
        raise ValueError(f"{where}: session_timeout_ms must be an int > 0, got {session_timeout_ms!r}")
    if not isinstance(aggregate, AggregateOperation):
        raise TypeError(f"{where}: aggregate must be an AggregateOperation, got {aggregate!r}")
    if aggregate.combine is None:
        raise ValueError(f"{where}: aggregate {aggregate.name!r} has no combine function, which"
                         " merging sessions needs")
    if key_fn is not None and not callable(key_fn):
        raise TypeError(f"{where}: key_fn must be callable or None, got {key_fn!r}")
    if not isinstance(early_results_period_ms, int) or early_results_period_ms < 0:
        raise ValueError(f"{where}: early_results_period_ms must be an int >= 0, got"
                         f" {early_results_period_ms!r}")
    return lambda: SessionWindowP(session_timeout_ms, key_fn, aggregate, early_results_period_ms,
                                  clock_ms)
