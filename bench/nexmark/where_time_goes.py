"""Where a NEXMark query's time goes: py-spy samples of every member while the query runs,
sorted into the engine's parts by the innermost frame that names one.

    python bench/nexmark/where_time_goes.py q5,q8 [--events 1000000] [--members 1] [--rate 200]

Needs ``pip install py-spy``. Each member is sampled (``py-spy record --format raw --threads
--nonblocking --native``) from the job's submission to its end; a sample belongs to the first
part, from the leaf up, whose file or function matches (``PARTS``), so a user function called by
a window processor counts as the query's own code, and ``gc`` is CPython's collector seen in
the native frames. Idle samples (parked threads, gRPC waiting) are dropped by py-spy.
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
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source, preload_pipeline  # noqa: E402

#: (part, substrings of a frame "function (file:line)"), tried leaf first, in this order per frame
PARTS = [
    ("gc", ("gc_collect", "collect_with_callback", "gc_collect_main")),
    ("pickling", ("pickle", "dumps (", "loads (", "_pickle")),
    ("query's functions", ("/bench/nexmark/",)),
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


def part_of(frames: list[str]) -> str:
    """The part a sample's stack (root first) belongs to."""
    for frame in reversed(frames):
        for part, needles in PARTS:
            if any(needle in frame for needle in needles):
                return part
    return "other (interpreter, threads, libraries)"


def summarize(raw_path: Path) -> Counter:
    """Samples per part in one ``py-spy --format raw`` file."""
    parts: Counter = Counter()
    for line in raw_path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            parts[part_of(stack.split(";")[1:])] += int(count)
    return parts


def _record(pid: int, out: Path, rate: int) -> subprocess.Popen:
    return subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--threads",
                             "--nonblocking", "--native", "--rate", str(rate), "--output", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def profile(name: str, events: list, settings: QuerySettings, members: int, rate: int, out_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="nexmark-") as shares, tempfile.TemporaryDirectory() as logs, \
            jet.local_cluster(members=members, log_dir=logs) as cluster:
        source = nexmark_source(write_shares(events, members, shares))
        cluster.new_job(preload_pipeline(shares)).join(timeout=600)
        raws = [out_dir / f"{name}-m{members}-member{i}.txt" for i in range(members)]
        spies = [_record(member.pid, raw, rate) for member, raw in zip(cluster.members, raws)]
        time.sleep(1.0)  # py-spy attaches
        started = time.perf_counter()
        cluster.new_job(pipeline(name, source, settings, Sinks.noop())).join(timeout=1800)
        elapsed = time.perf_counter() - started
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            spy.wait(timeout=60)
    print(f"\n{name}, {members} member(s): {elapsed:.2f} s, {len(events) / elapsed:,.0f} events/s "
          f"(under py-spy at {rate} Hz)")
    totals = [summarize(raw) for raw in raws]
    print("| part | " + " | ".join(f"member {i} samples (%)" for i in range(members)) + " |")
    print("| --- " * (members + 1) + "|")
    for part in [p for p, _ in PARTS] + ["other (interpreter, threads, libraries)"]:
        cells = [f"{t[part]} ({100 * t[part] / max(1, sum(t.values())):.0f} %)" for t in totals]
        print(f"| {part} | " + " | ".join(cells) + " |")
    print("| busy samples | " + " | ".join(str(sum(t.values())) for t in totals) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "nexmark-profiles"))
    args = parser.parse_args()
    config = GeneratorConfig(events=args.events)
    events = generated(config)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.queries.split(","):
        profile(name, events, QuerySettings.of(config), args.members, args.rate, out_dir)


if __name__ == "__main__":
    main()
