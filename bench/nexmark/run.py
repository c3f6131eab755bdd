"""NEXMark throughput: every query on Jet (1 and 2 members; no guarantee, at-least-once and
exactly-once with a snapshot every second), on Bytewax where it has the query, and in plain
Python, all over the same pre-generated events.

    python bench/nexmark/run.py [--events 1000000] [--queries q0,q1,...] [--members 1,2]
        [--guarantees none,at-least-once,exactly-once] [--systems jet,bytewax,python] [--repeat 1]

A Jet run is timed from ``new_job`` to the end of ``join``: the source's processors (one a
member) emit their share of the events, loaded by a first job and kept in the member, as fast as
the job takes them, then close, so the job ends when the last window has been emitted; results go to ``Sinks.noop()`` and their
count is the sink vertex's ``in``. Bytewax runs one worker in this process
(``run_main``); plain Python is ``oracle.answer``. Every output count is compared with the
oracle's (Bytewax's whole output too), but for q4 and q6 (updates per key, see
``oracle.normalized``) and q12 (processing-time windows).

``--repeat N`` runs every cell N times, in N rounds over the whole set (Jet's on one cluster per
member count), and reports each cell's fastest run: this machine's speed moves by tens of per
cent from minute to minute, and the fastest of runs spread over the rounds is the least
disturbed.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

import jet  # noqa: E402
from jet import Sinks  # noqa: E402
from nexmark import oracle  # noqa: E402
from nexmark.events import generated, write_shares  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QUERIES, QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source, preload_pipeline  # noqa: E402

ALL = ",".join(sorted(QUERIES, key=lambda name: int(name[1:])))
SINK = "noop"
UNCOUNTED = ("q4", "q6", "q12")  # their output counts are not the oracle's (see the docstring)


def _sink_count(metrics: dict) -> int | None:
    for vertex, figures in metrics.items():
        if vertex.startswith(SINK) and "in" in figures:
            return figures["in"]
    return None


def run_jet(names: list[str], events: list, settings: QuerySettings, members: int, guarantees: list[str],
            report, repeat: int = 1) -> None:
    """Each query under each guarantee on a cluster of ``members``, ``repeat`` rounds, calling
    ``report(system, setting, name, seconds, output count, snapshots taken, the members' CPU
    seconds)`` for each run."""
    with tempfile.TemporaryDirectory(prefix="nexmark-") as shares, tempfile.TemporaryDirectory() as logs, \
            jet.local_cluster(members=members, log_dir=logs) as cluster:
        source = nexmark_source(write_shares(events, members, shares))
        cluster.new_job(preload_pipeline(shares)).join(timeout=600)
        for _ in range(repeat):
            for guarantee in guarantees:
                for name in names:
                    job_config = {"processing_guarantee": guarantee, "snapshot_interval_ms": 1000}
                    cpu_before = members_cpu_seconds(cluster)
                    started = time.perf_counter()
                    job = cluster.new_job(pipeline(name, source, settings, Sinks.noop()), job_config)
                    job.join(timeout=1800)
                    elapsed = time.perf_counter() - started
                    cpu = members_cpu_seconds(cluster) - cpu_before
                    report("jet", f"{members} member{'s' * (members > 1)}, {guarantee}", name, elapsed,
                           _sink_count(job.metrics()), job.info().get("snapshotCount", 0), cpu)


def members_cpu_seconds(cluster) -> float:
    """CPU seconds (user + system) the cluster's member processes have used so far: a measure
    another process on the machine disturbs less than the wall clock."""
    total = 0
    for member in cluster.members:
        with open(f"/proc/{member.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def run_bytewax(names: list[str], events: list, settings: QuerySettings, report, repeat: int = 1) -> None:
    """The queries Bytewax has, each output compared with the oracle's whole."""
    from nexmark import bytewax_queries
    pairs = bytewax_queries.timestamped(events)
    for _ in range(repeat):
        for name in names:
            if name in bytewax_queries.QUERIES:
                elapsed, output = bytewax_queries.run(name, pairs, settings)
                same = oracle.normalized(name, output) == oracle.answer(name, events, settings)
                report("bytewax", "1 worker", name, elapsed, len(output), same=same)


def run_python(names: list[str], events: list, settings: QuerySettings, report, repeat: int = 1) -> None:
    """The oracle timed: each query's answer as a multiset, in this process."""
    for _ in range(repeat):
        for name in names:
            started = time.perf_counter()
            answer = oracle.answer(name, events, settings)
            report("python", "oracle", name, time.perf_counter() - started, sum(answer.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--queries", default=ALL)
    parser.add_argument("--members", default="1,2")
    parser.add_argument("--guarantees", default="none,at-least-once,exactly-once")
    parser.add_argument("--systems", default="jet,bytewax,python")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each cell; the fastest is reported")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat: at least 1 run of each cell, got {args.repeat}")
    config = GeneratorConfig(events=args.events)
    settings = QuerySettings.of(config)
    names = args.queries.split(",")
    unknown = [name for name in names if name not in QUERIES]
    if unknown:
        parser.error(f"--queries: no query {', '.join(unknown)}; the queries are {ALL}")
    systems = args.systems.split(",")
    started = time.perf_counter()
    events = generated(config)
    gc.freeze()  # as the members do with theirs (see nexmark.source)
    print(f"{len(events):,} events ({config}) in {time.perf_counter() - started:.1f} s", flush=True)
    expected = {name: sum(oracle.answer(name, events, settings).values()) for name in names}
    rows: list[tuple] = []
    loads: list[float] = []  # the 1-minute load average after each run: the machine is shared

    def report(system, setting, name, seconds, count, snapshots=None, cpu=None, same=None):
        if same is None:
            same = count == expected[name] if name not in UNCOUNTED else None
        rows.append((system, setting, name, seconds, count, snapshots, same))
        loads.append(os.getloadavg()[0])
        cpu_text = "" if cpu is None else f", members' CPU {cpu:.2f} s ({len(events) / cpu:,.0f} events/CPU-s)"
        print(f"{system} {setting} {name}: {seconds:.2f} s, {len(events) / seconds:,.0f} events/s{cpu_text}, "
              f"{count} results, snapshots {snapshots}, oracle {'-' if same is None else same}, "
              f"load {loads[-1]:.1f}", flush=True)

    if "jet" in systems:
        for members in (int(m) for m in args.members.split(",")):
            run_jet(names, events, settings, members, args.guarantees.split(","), report, args.repeat)
    if "bytewax" in systems:
        run_bytewax(names, events, settings, report, args.repeat)
    if "python" in systems:
        run_python(names, events, settings, report, args.repeat)
    _print_table(names, rows, len(events))
    print(f"\nload average (1 min) after each run: {min(loads):.1f} to {max(loads):.1f}")


def _print_table(names: list[str], rows: list[tuple], events: int) -> None:
    """The markdown table: a row per query, a column per system and setting."""
    settings = list(dict.fromkeys((system, setting) for system, setting, *_ in rows))
    print("\nevents/s (thousands), the fastest run of each cell; * = an output differs from the oracle's\n")
    print("| query | " + " | ".join(f"{system} {setting}" for system, setting in settings) + " |")
    print("| --- " * (len(settings) + 1) + "|")
    cells: dict[tuple, tuple] = {}  # each cell's fastest run, and whether every run matched the oracle
    for system, setting, name, seconds, _, _, same in rows:
        best = cells.get((system, setting, name))
        if best is not None:
            seconds = min(seconds, best[0])
            same = False if False in (same, best[1]) else same
        cells[(system, setting, name)] = (seconds, same)
    for name in names:
        line = []
        for system, setting in settings:
            found = cells.get((system, setting, name))
            if found is None:
                line.append("-")
            else:
                seconds, same = found
                line.append(f"{events / seconds / 1000:,.1f}" + ("*" if same is False else ""))
        print(f"| {name} | " + " | ".join(line) + " |")


if __name__ == "__main__":
    main()
