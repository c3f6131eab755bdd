"""Where a NEXMark query's time goes: py-spy samples of every member while the query runs,
sorted into the engine's parts by the innermost frame that names one.

    python bench/nexmark/where_time_goes.py q5,q8 [--events 1000000] [--members 1] [--rate 200]
        [--guarantee none|at-least-once|exactly-once] [--gil]

Needs ``pip install py-spy``. Each member is sampled (``py-spy record --format raw --threads
--nonblocking``) from the job's submission to its end; a sample belongs to the first part,
from the leaf up, whose file or function matches (``PARTS``), so a user function called by a
window processor counts as the query's own code. py-spy drops the samples of threads it sees
idle; the waits it still counts (the cooperative thread's backoff park, lock waits, gRPC
polling) are a part of their own. They undercount a member's work: with ``--gil`` only the
thread holding the GIL is sampled (py-spy pauses the member for each sample), so a member's
samples over the rate are its Python time. The collector is timed apart (``gc_timer``): py-spy sees it only in
native stacks, which need it to pause the member at every sample.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

import jet  # noqa: E402
from jet import Sinks  # noqa: E402
from nexmark.events import generated, write_shares  # noqa: E402
from nexmark.gc_timer import gc_stats_pipeline  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source, preload_pipeline  # noqa: E402

#: (part, substrings of a frame "function (file:line)"), tried leaf first, in this order per frame
PARTS = [
    ("idle waits (backoff park, locks, gRPC polling)", ("BackoffIdleStrategy.idle", "Condition.wait", "Event.wait",
                                                         "selectors.py", "grpc/_server.py", "_poll_")),
    ("pickling (chunks to other members, snapshots)", ("pickle", "dumps (", "loads (", "encode_chunk", "item_columns.py",
                                                       "decode_chunk")),
    ("partitioning (key encoding, hashing)", ("key_encoding.py", "partitioner.py", "partitioning.py")),
    ("query's functions", ("nexmark/",)),
    ("source", ("source_builder.py", "stream_emitter.py", "event_time.py")),
    ("sink", ("processors/sinks.py", "connectors/sinks.py")),
    ("windows and keyed state", ("processors/windows.py", "session_window.py", "co_group.py", "stateful.py",
                                 "interval_join.py", "processors/aggregation.py", "core/aggregate.py",
                                 "aggregate_operations.py", "join_processors.py", "hash_join", "frames.py")),
    ("stateless transforms", ("processors/transform.py", "core/functions.py")),
    ("snapshots", ("/snapshot", "snapshot_state.py", "barrier")),
    ("network (senders, receivers, links)", ("cluster/edges/", "cluster/links/", "grpc")),
    ("queues, inbox/outbox, tasklets", ("jet/execution/", "core/outbox.py", "core/inbox.py", "core/processor.py")),
]


TOP_LEAVES = 8


def part_of(frames: list[str]) -> str:
    """The part a sample's stack (root first) belongs to."""
    for frame in reversed(frames):
        for part, needles in PARTS:
            if any(needle in frame for needle in needles):
                return part
    return "other (interpreter, threads, libraries)"


def summarize(raw_path: Path) -> tuple[Counter, Counter]:
    """Samples per part, and per innermost function (its line dropped), in one ``py-spy
    --format raw`` file."""
    parts: Counter = Counter()
    leaves: Counter = Counter()
    for line in raw_path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            frames = stack.split(";")[1:] or ["(no frame)"]
            parts[part_of(frames)] += int(count)
            leaves[frames[-1].rsplit(":", 1)[0] + ")"] += int(count)
    return parts, leaves


def _record(pid: int, out: Path, rate: int, gil: bool) -> subprocess.Popen:
    return subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--threads",
                             "--gil" if gil else "--nonblocking", "--rate", str(rate), "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def profile(name: str, events: list, settings: QuerySettings, members: int, rate: int, out_dir: Path,
            guarantee: str, gil: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="nexmark-") as shares, tempfile.TemporaryDirectory() as logs, \
            jet.local_cluster(members=members, log_dir=logs) as cluster:
        source = nexmark_source(write_shares(events, members, shares))
        cluster.new_job(preload_pipeline(shares)).join(timeout=600)
        cluster.new_job(gc_stats_pipeline()).join(timeout=60)  # from here on
        raws = [out_dir / f"{name}-m{members}-{guarantee}{'-gil' * gil}-member{i}.txt" for i in range(members)]
        spies = [_record(member.pid, raw, rate, gil) for member, raw in zip(cluster.members, raws)]
        time.sleep(1.0)  # py-spy attaches
        started = time.perf_counter()
        cluster.new_job(pipeline(name, source, settings, Sinks.noop()),
                        {"processing_guarantee": guarantee, "snapshot_interval_ms": 1000}).join(timeout=1800)
        elapsed = time.perf_counter() - started
        collections = cluster.new_job(gc_stats_pipeline())
        collections.join(timeout=60)
        collected = sorted(collections.result("gc"))
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            if spy.wait(timeout=60) != 0:
                print(f"py-spy: {spy.stderr.read().decode()[-2000:]}", file=sys.stderr)
    print(f"\n{name}, {members} member(s), {guarantee}: {elapsed:.2f} s, {len(events) / elapsed:,.0f} events/s "
          f"(under py-spy at {rate} Hz)")
    summaries = [summarize(raw) for raw in raws]
    totals = [parts for parts, _ in summaries]
    print("| part | " + " | ".join(f"member {i} samples (%)" for i in range(members)) + " |")
    print("| --- " * (members + 1) + "|")
    for part in [p for p, _ in PARTS] + ["other (interpreter, threads, libraries)"]:
        cells = [f"{t[part]} ({100 * t[part] / max(1, sum(t.values())):.0f} %)" for t in totals]
        print(f"| {part} | " + " | ".join(cells) + " |")
    print("| busy samples | " + " | ".join(str(sum(t.values())) for t in totals) + " |")
    if gil:
        print("GIL held: " + ", ".join(f"member {i} {sum(t.values()) / rate:.2f} s" for i, t in enumerate(totals))
              + f" of {elapsed:.2f} s")
    for member, count, gen2, seconds in collected:
        print(f"member {member}: {count} collections ({gen2} of generation 2), {seconds:.3f} s "
              f"({100 * seconds / elapsed:.0f} % of the run)")
    for member, (_, leaves) in enumerate(summaries):
        busy = max(1, sum(leaves.values()))
        print(f"member {member}, innermost functions: "
              + "; ".join(f"{leaf} {100 * n / busy:.0f} %" for leaf, n in leaves.most_common(TOP_LEAVES)), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--guarantee", default="none")
    parser.add_argument("--gil", action="store_true",
                        help="sample only the thread holding the GIL (py-spy --gil): samples / rate = Python time")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "nexmark-profiles"))
    args = parser.parse_args()
    config = GeneratorConfig(events=args.events)
    events = generated(config)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.queries.split(","):
        profile(name, events, QuerySettings.of(config), args.members, args.rate, out_dir, args.guarantee, args.gil)


if __name__ == "__main__":
    main()
