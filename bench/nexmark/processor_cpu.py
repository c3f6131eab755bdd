"""CPU seconds of one query's stateful processors alone, driven in this process over the
NEXMark events (no members, queues or network): a measure of the per-event paths that the
machine's load moves far less than a whole run's wall time.

    python bench/nexmark/processor_cpu.py [q18,q11,q20,q4] [--events 1000000] [--repeat 3]

Events go in chunks of 2,048 ``(timestamp, event)`` pairs, a watermark (the highest timestamp
minus the allowed lag, throttled to 100 ms) after every chunk, then ``complete()``; the time is
``time.process_time()`` around the processors' calls (the inputs are filtered before), with the member's collector settings
(``settle_member_heap`` after the events are loaded), best of ``--repeat``.

``--instructions`` counts instead the machine instructions of one run under valgrind's
callgrind (``apt-get install valgrind``): this process again, once loading the events only and
once running the query after, the difference being the run's. Load from other processes does
not move the count, so it compares two trees in one go where CPU seconds need alternating
rounds; callgrind runs about 50x slower, so keep ``--events`` near 200,000.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

from jet.core.aggregate import counting  # noqa: E402
from jet.core.inbox import Inbox  # noqa: E402
from jet.core.outbox import Outbox  # noqa: E402
from jet.core.processor import Context  # noqa: E402
from jet.core.processors import (accumulate_by_frame_p, aggregate_to_session_window_p,  # noqa: E402
                                 combine_to_sliding_window_p, transform_stateful_p)
from jet.core.processors.interval_join import interval_join_p  # noqa: E402
from jet.core.sliding_window_policy import tumbling_win_policy  # noqa: E402
from jet.core.special_items import Watermark  # noqa: E402
from jet.execution.gc_tuning import settle_member_heap  # noqa: E402
from jet.pipeline.aggregate_operations import AggregateOperations  # noqa: E402

from nexmark import functions as f  # noqa: E402
from nexmark.aggregations import q16_statistics  # noqa: E402
from nexmark import winning_bids as wb  # noqa: E402
from nexmark.events import generated  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QuerySettings  # noqa: E402

CHUNK = 2048
WATERMARK_STEP_MS = 100


class DrivenProcessor:
    """One processor with an outbox that takes everything; ``output`` collects its items."""

    def __init__(self, supplier: Callable[[], Any]) -> None:
        self.processor = supplier()
        self.outbox = Outbox(1, 1 << 30)
        self.processor.init(self.outbox, Context(vertex_name="driven"))
        self.inbox = Inbox()

    def _take(self) -> list:
        items, self.outbox.buckets[0] = self.outbox.buckets[0], []
        if self.outbox.pending_special is not None:
            self.outbox.special_taken()
        return items

    def process(self, chunk: list, ordinal: int = 0) -> list:
        self.inbox.add_chunk(chunk)
        while not self.inbox.is_empty():
            self.processor.process(ordinal, self.inbox)
        return self._take()

    def watermark(self, timestamp: int) -> list:
        while not self.processor.try_process_watermark(Watermark(timestamp)):
            pass
        return self._take()

    def complete(self) -> list:
        while not self.processor.complete():
            pass
        return self._take()


def _chunks(pairs: list, lag_ms: int):
    top = None
    for start in range(0, len(pairs), CHUNK):
        chunk = pairs[start:start + CHUNK]
        top = max([top or chunk[0][0]] + [ts for ts, _ in chunk])
        yield chunk, (top - lag_ms) // WATERMARK_STEP_MS * WATERMARK_STEP_MS


def _one_input(supplier: Callable[[], Any], pairs: list, lag_ms: int, then: Callable[[], Any] | None = None) -> int:
    first, second = DrivenProcessor(supplier), then and DrivenProcessor(then)
    count = 0
    last_wm = None
    for chunk, wm in _chunks(pairs, lag_ms):
        out = first.process(chunk)
        if wm != last_wm:
            out += first.watermark(wm)
            last_wm = wm
        count += _pass(second, out)
    count += _pass(second, first.complete())
    if second is not None:
        count += len(second.complete())
    return count


def _pass(second: DrivenProcessor | None, items: list) -> int:
    if second is None:
        return len(items)
    items = [i for i in items if type(i) is not Watermark]
    return len(second.process(items)) if items else 0


def _per_day(key_fn: Callable, operation: Any) -> Callable[[list, QuerySettings], Callable[[], int]]:
    """q16-q19: a day-long window's two stages over the bids (see ``queries._per_day``)."""
    def query(events: list, s: QuerySettings) -> Callable[[], int]:
        bids = [(ts, e) for ts, e in events if f.is_bid(e)]
        policy = tumbling_win_policy(f.DAY_MS)
        return lambda: _one_input(accumulate_by_frame_p(key_fn, policy, operation), bids, s.allowed_lag_ms,
                                  combine_to_sliding_window_p(policy, operation))
    return query


q16 = _per_day(f.q16_key, q16_statistics())
q18 = _per_day(f.q18_key, AggregateOperations.max_by(f.latest))
q19 = _per_day(f.key_auction, AggregateOperations.top_n(10, f.q19_order))


def q11(events: list, s: QuerySettings) -> Callable[[], int]:
    bids = [(ts, e) for ts, e in events if f.is_bid(e)]
    return lambda: _one_input(aggregate_to_session_window_p(s.window_ms, f.bidder_of, counting()), bids,
                              s.allowed_lag_ms)


def q4(events: list, s: QuerySettings) -> Callable[[], int]:
    mine = [(ts, wb.project(e)) for ts, e in events if wb.is_auction_or_bid(e)]
    ttl_ms = 2 * s.max_auction_ms + s.allowed_lag_ms
    return lambda: _one_input(transform_stateful_p("flat_map", wb.auction_id, ttl_ms, wb.create, wb.accumulate,
                                                   wb.on_evict), mine, s.allowed_lag_ms)


def q20(events: list, s: QuerySettings) -> Callable[[], int]:
    chunks = [([(ts, e) for ts, e in chunk if f.q20_auction(e)], [(ts, e) for ts, e in chunk if f.is_bid(e)], wm)
              for chunk, wm in _chunks(events, s.allowed_lag_ms)]

    def run() -> int:
        join = DrivenProcessor(interval_join_p(f.id_of, f.key_auction, 0, s.max_auction_ms, f.q20_result))
        count, last_wm = 0, None
        for auctions, bids, wm in chunks:
            count += len(join.process(auctions, 0)) + len(join.process(bids, 1))
            if wm != last_wm:
                count += len(join.watermark(wm)) - 1
                last_wm = wm
        return count + len(join.complete())
    return run


QUERIES = {"q16": q16, "q18": q18, "q19": q19, "q11": q11, "q20": q20, "q4": q4}


def callgrind_instructions(arguments: list[list[str]]) -> list[int]:
    """The instructions each of these commands (``python`` argument lists) runs under callgrind,
    all run at once."""
    with tempfile.TemporaryDirectory() as directory:
        runs = []
        for index, command in enumerate(arguments):
            out = os.path.join(directory, f"callgrind.{index}")
            runs.append((out, subprocess.Popen(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, *command],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
        counts = []
        for out, process in runs:
            _, errors = process.communicate()
            if process.returncode:
                raise SystemExit(f"valgrind failed ({process.returncode}): {errors.decode()[-2000:]}")
            with open(out) as profile:
                counts.append(next(int(line.split()[1]) for line in profile if line.startswith("summary:")))
    return counts


def instructions(name: str, events: int) -> int:
    """Instructions of one run of query ``name`` over ``events`` events, counted by callgrind."""
    setup, run = callgrind_instructions([[__file__, name, f"--events={events}", f"--repeat={repeat}"]
                                         for repeat in (0, 1)])
    return run - setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries", nargs="?", default="q18,q11,q20,q4")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs, the fastest reported (0: load the events only)")
    parser.add_argument("--instructions", action="store_true", help="count one run's instructions (see above)")
    args = parser.parse_args()
    names = args.queries.split(",")
    unknown = [name for name in names if name not in QUERIES]
    if unknown:
        parser.error(f"no query {', '.join(unknown)} here; the queries are {', '.join(QUERIES)}")
    if args.instructions:
        for name in names:
            count = instructions(name, args.events)
            print(f"{name}: {count / 1e6:,.0f} M instructions ({count / args.events:,.0f} an event)", flush=True)
        return
    config = GeneratorConfig(events=args.events)
    events = generated(config)
    settings = QuerySettings.of(config)
    settle_member_heap()
    for name in names:
        run = QUERIES[name](events, settings)
        if not args.repeat:
            continue
        times, count = [], 0
        for _ in range(args.repeat):
            started = time.process_time()
            count = run()
            times.append(time.process_time() - started)
        print(f"{name}: {min(times):.2f} s CPU (best of {args.repeat}: {', '.join(f'{t:.2f}' for t in times)}),"
              f" {count:,} items out", flush=True)


if __name__ == "__main__":
    main()
