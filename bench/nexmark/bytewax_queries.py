"""NEXMark queries as Bytewax 0.21 dataflows over the same events, run in this process with
``run_main`` (one worker). ``run(name, events, settings) -> (seconds, output)``.

Windows use an ``EventClock`` that waits 10 s of event time: Bytewax's watermark follows the
newest event seen plus the system time since, so slack for the generator's disorder alone could
drop events if the run stalls. q5's second step (the hottest auctions of each window) gathers
the window counts with ``reduce_final``, which emits when the input ends; Bytewax has no
window over window results. Queries not here need what Bytewax lacks in one operator (q3's
unbounded two-input join, q8's window join of two streams by key, interval joins) or were not
written (the rest)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, SlidingWindower, TumblingWindower, count_window, fold_window
from bytewax.testing import TestingSink, TestingSource, run_main

from . import functions as f
from .queries import QuerySettings

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
BATCH = 4096
WAIT = timedelta(seconds=10)


def _event(pair: tuple) -> Any:
    return pair[1]


def _clock() -> EventClock:
    return EventClock(lambda pair: pair[0], wait_for_system_duration=WAIT)


def _bids(flow: Dataflow, pairs: list) -> Any:
    events = op.input("events", flow, TestingSource(pairs, BATCH))
    return op.filter("bids", events, lambda pair: type(pair[1]) is f.Bid)


def q0(flow, pairs, s): return op.map("event", op.input("events", flow, TestingSource(pairs, BATCH)), _event)
def q1(flow, pairs, s): return op.map("q1", _bids(flow, pairs), lambda pair: f.q1_dollars_to_euros(pair[1]))


def q2(flow, pairs, s):
    selected = op.filter("q2", _bids(flow, pairs), lambda pair: f.q2_selected(pair[1]))
    return op.map("project", selected, lambda pair: f.q2_projection(pair[1]))


def q5(flow, pairs, s):
    windower = SlidingWindower(length=timedelta(milliseconds=s.window_ms),
                               offset=timedelta(milliseconds=s.period_ms), align_to=EPOCH)
    counts = count_window("count", _bids(flow, pairs), _clock(), windower, lambda pair: str(pair[1].auction))

    def by_window(item):
        auction, (window_id, count) = item
        return str(window_id), (count, (int(auction),))

    def hottest(a, b):
        return a if a[0] > b[0] else b if b[0] > a[0] else (a[0], a[1] + b[1])

    def row(item):
        window_id, (count, auctions) = item
        return int(window_id) * s.period_ms + s.window_ms, tuple(sorted(auctions)), count

    return op.map("row", op.reduce_final("hottest", op.map("by-window", counts.down, by_window), hottest), row)


def q7(flow, pairs, s):
    windower = TumblingWindower(length=timedelta(milliseconds=s.window_ms), align_to=EPOCH)
    keyed = op.key_on("all", _bids(flow, pairs), lambda pair: "all")

    def fold(acc, pair):
        bid = pair[1]
        if acc[0] is None or bid.price > acc[0]:
            return bid.price, [bid]
        if bid.price == acc[0]:
            acc[1].append(bid)
        return acc

    def merge(a, b):
        return a if b[0] is None or (a[0] is not None and a[0] > b[0]) else b if a[0] is None or b[0] > a[0] \
            else (a[0], a[1] + b[1])

    highest = fold_window("highest", keyed, _clock(), windower, lambda: (None, []), fold, merge)
    return op.map("row", highest.down,
                  lambda item: ((item[1][0] + 1) * s.window_ms, (item[1][1][0], tuple(sorted(item[1][1][1])))))


def q14(flow, pairs, s):
    selected = op.filter("q14", _bids(flow, pairs), lambda pair: f.q14_selected(pair[1]))
    return op.map("map", selected, lambda pair: f.q14_map(pair[1]))


def q21(flow, pairs, s):
    return op.filter("found", op.map("q21", _bids(flow, pairs), lambda pair: f.q21_map(pair[1])), f.is_not_none)


def q22(flow, pairs, s): return op.map("q22", _bids(flow, pairs), lambda pair: f.q22_map(pair[1]))


QUERIES: dict[str, Callable] = {name: fn for name, fn in globals().items()
                                if name[0] == "q" and name[1:].isdigit()}


def timestamped(events: list) -> list:
    """The events as ``(datetime, event)`` pairs, Bytewax's timestamps, made before the clock
    starts as Jet's are (its source hands over epoch milliseconds the generator made)."""
    return [(EPOCH + timedelta(milliseconds=ts), e) for ts, e in events]


def run(name: str, pairs: list, settings: QuerySettings) -> tuple[float, list]:
    """Run query ``name`` over ``pairs`` (see ``timestamped``); its seconds and output."""
    flow = Dataflow(f"nexmark-{name}")
    out: list = []
    op.output("out", QUERIES[name](flow, pairs, settings), TestingSink(out))
    started = time.perf_counter()
    run_main(flow)
    return time.perf_counter() - started, out
