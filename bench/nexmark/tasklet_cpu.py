"""CPU seconds of every tasklet of a NEXMark query, in each member, without a sampling profiler.

    python bench/nexmark/tasklet_cpu.py q4 [--members 2] [--events 1000000]

A first job makes each member wrap its tasklets' ``call`` (processor tasklets per vertex,
senders and receivers of distributed edges) and a processor tasklet's ``_hand_over_outbox``
(its outbound collectors: the keyed split of a distributed edge) in ``time.thread_time_ns``.
Then the query runs, with a no-op sink, and a last job reports each member's sums. Besides,
each member thread's CPU is read from ``/proc``. py-spy's samples pause a member for each
sample; this costs two clock reads per call instead (a few percent).
``_hand_over_outbox`` is also inside its tasklet's ``call``: the two overlap.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

import jet  # noqa: E402
from jet import Sinks  # noqa: E402

from nexmark.events import generated, write_shares  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QUERIES, QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source, preload_pipeline  # noqa: E402
from nexmark.tasklet_timing import instrument, job, report  # noqa: E402

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("query", choices=sorted(QUERIES, key=lambda q: int(q[1:])))
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.members < 1 or args.events < 1:
        parser.error(f"--members and --events must be at least 1, got {args.members} and {args.events}")
    config = GeneratorConfig(events=args.events)
    events = generated(config)
    with tempfile.TemporaryDirectory(prefix="nexmark-") as shares, tempfile.TemporaryDirectory() as logs, \
            jet.local_cluster(members=args.members, log_dir=logs) as cluster:
        source = nexmark_source(write_shares(events, args.members, shares))
        cluster.new_job(preload_pipeline(shares)).join(timeout=600)
        before = cluster.new_job(job("tasklet-cpu-before", report))
        before.join(timeout=60)
        cluster.new_job(job("tasklet-cpu-instrument", instrument)).join(timeout=60)
        started = time.perf_counter()
        cluster.new_job(pipeline(args.query, source, QuerySettings.of(config), Sinks.noop())).join(timeout=1800)
        elapsed = time.perf_counter() - started
        after = cluster.new_job(job("tasklet-cpu-after", report))
        after.join(timeout=60)
        threads_before = {member: threads for member, _, threads in before.result("tasklet-cpu-before")}
        reports = sorted(after.result("tasklet-cpu-after"))
    print(f"{args.query}, {args.members} member(s), {args.events:,} events: {elapsed:.2f} s")
    for member, tasklets, threads in reports:
        used = sorted(((seconds - threads_before[member].get(name, 0.0), name) for name, seconds in threads.items()),
                      reverse=True)
        print(f"\nmember {member}: threads' CPU s " + ", ".join(f"{name} {s:.2f}" for s, name in used[:4] if s >= 0.01))
        print("| tasklet, method | CPU s | calls |\n| --- | ---: | ---: |")
        for name, (seconds, calls) in sorted(tasklets.items(), key=lambda kv: -kv[1][0]):
            if seconds >= 0.005:
                print(f"| {name} | {seconds:.3f} | {calls:,} |")


if __name__ == "__main__":
    main()
