"""A windowed join of two streams: Jet's ``window(...).join(...)`` against Bytewax's
``join_window`` on the same input, as fast as each can go (throughput of a finite stream).

    python bench/stream_join_bench.py [--events 200000] [--keys 1000] [--systems jet,bytewax]
        [--members 1,2]

The definition: two streams of ``--events`` events each, event ``i`` = ``(i, i % keys)``
stamped ``i`` ms (so 1,000 events a second of event time per side, in order); both keyed by
``i % keys``, joined in 1 s tumbling windows aligned to the epoch, every left event with every
right event of its key and window (the product: with 1,000 keys one pair per left event). Jet
allows no lag (its watermark is the minimum over both sources); Bytewax's ``EventClock`` waits
10 s of event time, as it reads its inputs in turns of 4,096 events. The
sources emit everything at once and end, which closes every window; the time is from the job's
submission to its end (Jet: ``jet.local_cluster(members=k)``; Bytewax: ``run_main``, one worker,
in this process). Each run's pair count is checked against the oracle.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member")]

WINDOW_MS = 1000
BATCH = 4096
BYTEWAX_WAIT_MS = 10_000


def expected_pairs(events: int, keys: int) -> int:
    """Pairs of the join: per window and key, left count x right count (the sides are alike)."""
    counts: dict = {}
    for i in range(events):
        window_key = (i // WINDOW_MS, i % keys)
        counts[window_key] = counts.get(window_key, 0) + 1
    return sum(n * n for n in counts.values())


def interval_pairs(events: int, keys: int, interval_ms: int) -> int:
    """Pairs of the interval join: per left event, the right events of its key within +- the
    interval (a key's events are ``keys`` ms apart)."""
    reach, total = interval_ms // keys, 0
    for key in range(min(keys, events)):
        n = len(range(key, events, keys))
        total += sum(min(n - 1, j + reach) - max(0, j - reach) + 1 for j in range(n))
    return total


# -- Jet --------------------------------------------------------------------------------------
class _Side:
    def __init__(self, events: int, keys: int) -> None:
        self.events, self.keys, self.next = events, keys, 0

    def fill(self, buffer) -> None:
        end = min(self.next + BATCH, self.events)
        keys = self.keys
        for i in range(self.next, end):
            buffer.add((i, i % keys), i)
        self.next = end
        if end == self.events:
            buffer.close()


def jet_pipeline(events: int, keys: int, interval_ms: int | None = None):
    from jet import Pipeline, Sinks, SourceBuilder, WindowDefinition

    def side(name: str):
        return (SourceBuilder.timestamped_stream(name, lambda context: _Side(events, keys))
                .fill_buffer_fn(_Side.fill).build())

    p = Pipeline.create()
    left = p.read_from(side("left")).with_native_timestamps(0)
    right = p.read_from(side("right")).with_native_timestamps(0)
    keyed = left.grouping_key(lambda e: e[1])
    if interval_ms is None:
        joined = keyed.window(WindowDefinition.tumbling(WINDOW_MS)) \
            .join(right.grouping_key(lambda e: e[1]), lambda a, b: (a[0], b[0]))
    else:
        joined = keyed.interval_join(right.grouping_key(lambda e: e[1]), interval_ms, interval_ms,
                                     lambda a, b: (a[0], b[0]))
    joined.window(WindowDefinition.tumbling(WINDOW_MS)).aggregate(_counting()).write_to(Sinks.list("pairs"))
    return p


def _counting():
    from jet import AggregateOperations
    return AggregateOperations.counting()


def run_jet(events: int, keys: int, members: int, interval_ms: int | None = None) -> tuple[float, int]:
    import jet
    pipeline = jet_pipeline(events, keys, interval_ms)
    with jet.local_cluster(members=members) as cluster:
        started = time.perf_counter()
        job = cluster.new_job(pipeline)
        job.join(timeout=600)
        elapsed = time.perf_counter() - started
        pairs = sum(r.result for r in job.result("pairs"))
    return elapsed, pairs


# -- Bytewax ----------------------------------------------------------------------------------
def run_bytewax(events: int, keys: int) -> tuple[float, int]:
    from datetime import datetime, timedelta, timezone

    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators.windowing import EventClock, TumblingWindower, join_window
    from bytewax.testing import TestingSink, TestingSource, run_main

    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    items = [(i, str(i % keys)) for i in range(events)]
    flow = Dataflow("stream-join")
    # Bytewax reads the two inputs in turns of BATCH events (about 4 s of event time here) and
    # its watermark follows the newest event seen: with less slack the side read second is late.
    clock = EventClock(lambda e: epoch + timedelta(milliseconds=e[0]),
                       wait_for_system_duration=timedelta(milliseconds=BYTEWAX_WAIT_MS))
    windower = TumblingWindower(length=timedelta(milliseconds=WINDOW_MS), align_to=epoch)
    left = op.key_on("left-key", op.input("left", flow, TestingSource(items, BATCH)), lambda e: e[1])
    right = op.key_on("right-key", op.input("right", flow, TestingSource(items, BATCH)), lambda e: e[1])
    joined = join_window("join", clock, windower, left, right, insert_mode="product")
    counts = op.count_final("count", op.map("one", joined.down, lambda _kv: "pairs"), lambda k: k)
    out: list = []
    op.output("out", counts, TestingSink(out))
    started = time.perf_counter()
    run_main(flow)
    elapsed = time.perf_counter() - started
    return elapsed, sum(count for _, count in out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000, help="events per side")
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--systems", default="jet,bytewax")
    parser.add_argument("--members", default="1,2", help="Jet's member counts")
    parser.add_argument("--interval-ms", type=int, default=None,
                        help="also Jet's interval join, right.ts within left.ts +- this (its own pair count)")
    args = parser.parse_args()
    expected = expected_pairs(args.events, args.keys)
    rows = []
    for system in args.systems.split(","):
        settings = [int(m) for m in args.members.split(",")] if system == "jet" else [1]
        for setting in settings:
            if system == "jet":
                elapsed, pairs = run_jet(args.events, args.keys, setting)
                label = f"{setting} member{'s' if setting > 1 else ''}"
            else:
                try:
                    elapsed, pairs = run_bytewax(args.events, args.keys)
                except ImportError as e:
                    print(f"bytewax skipped: {e}", file=sys.stderr)
                    continue
                label = "1 worker"
            rows.append((system, label, elapsed, pairs))
            print(f"{system} {label}: {elapsed:.2f} s, {2 * args.events / elapsed:,.0f} events/s,"
                  f" {pairs:,} pairs (expected {expected:,})", flush=True)
    if args.interval_ms is not None:
        for setting in [int(m) for m in args.members.split(",")]:
            elapsed, pairs = run_jet(args.events, args.keys, setting, args.interval_ms)
            wanted = interval_pairs(args.events, args.keys, args.interval_ms)
            print(f"jet interval join +-{args.interval_ms} ms, {setting} member(s): {elapsed:.2f} s,"
                  f" {2 * args.events / elapsed:,.0f} events/s, {pairs:,} pairs (expected {wanted:,})", flush=True)
    print(f"\n{args.events:,} events per side, {args.keys:,} keys, 1 s tumbling windows; {expected:,} pairs\n")
    print("| system | setting | seconds | input events/s | pairs/s | pairs = oracle |")
    print("| --- | --- | --- | --- | --- | --- |")
    for system, label, elapsed, pairs in rows:
        print(f"| {system} | {label} | {elapsed:.2f} | {2 * args.events / elapsed:,.0f} | {pairs / elapsed:,.0f}"
              f" | {'yes' if pairs == expected else f'no: {pairs:,}'} |")


if __name__ == "__main__":
    main()
