"""Repeated jobs on one cluster (issue 32): the same NEXMark query run N times on one local
cluster of 2 members, each run's job time and every member's RSS printed, so a job that leaves
something behind in the members shows as later runs getting slower or the members growing.

    python bench/repeated_jobs_bench.py [--events 1000000] [--runs 5]
        [--cases q1-list,q7-list,q1-noop] [--members 2] [--guarantee none]
        [--one-cluster] [--heap] [--collect]

A case is ``<query>-<sink>``: ``list`` (``Sinks.list``, the results fetched with
``job.results()`` after the join, timed apart), ``observable`` (``Sinks.observable``, read to
its end while the job runs, which is the job's time) or ``noop``. Each case gets a cluster of
its own (all cases share one with ``--one-cluster``), started, loaded with the events
(``nexmark.run``'s preload job) and then given the same job ``--runs`` times. ``--heap`` asks every member after each run what it holds
(``member_heap``: objects the collector tracks, by type, and what grew); ``--collect`` makes
that ask run a full collection first (which changes what the next run finds).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "member"), str(Path(__file__).resolve().parent)]

import jet  # noqa: E402
from jet import Sinks  # noqa: E402
from member_heap import heap_stats, rss_kib  # noqa: E402
from nexmark.gc_timer import gc_stats_pipeline  # noqa: E402
from nexmark.events import generated, write_shares  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.queries import QUERIES, QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source, preload_pipeline  # noqa: E402

SINKS = ("list", "observable", "noop")
DEFAULT_CASES = "q1-list,q7-list,q1-noop"


def _sink(kind: str):
    return {"list": lambda: Sinks.list("out"), "observable": lambda: Sinks.observable("out"),
            "noop": Sinks.noop}[kind]()


def _rss_mib(cluster) -> list[float]:
    return [rss_kib(member.pid) / 1024 for member in cluster.members]


def _run_once(cluster, query: str, sink: str, source, settings: QuerySettings,
              config: dict) -> tuple[float, float, int]:
    """One job: (job seconds, seconds to fetch its results, result count)."""
    started = time.perf_counter()
    job = cluster.new_job(pipeline(query, source, settings, _sink(sink)), config)
    count = 0
    if sink == "observable":
        for _ in job.observable("out"):
            count += 1
    job.join(timeout=1800)
    elapsed = time.perf_counter() - started
    fetch = 0.0
    if sink == "list":
        fetched = time.perf_counter()
        count = len(job.result("out"))
        fetch = time.perf_counter() - fetched
    return elapsed, fetch, count


class LoadedCluster:
    """A local cluster whose members have loaded their share of the events (the preload job)."""

    def __init__(self, events: list, members: int) -> None:
        self._stack = contextlib.ExitStack()
        shares = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="nexmark-"))
        logs = self._stack.enter_context(tempfile.TemporaryDirectory())
        self.cluster = self._stack.enter_context(jet.local_cluster(members=members, log_dir=logs))
        self.source = nexmark_source(write_shares(events, members, shares))
        self.cluster.new_job(preload_pipeline(shares)).join(timeout=600)

    def close(self) -> None:
        self._stack.close()


def _collections(cluster) -> str:
    """Every member's collections since the last ask (``nexmark.gc_timer``, installed in the
    members by the events' preload): ``count (of them generation 2) seconds`` per member."""
    job = cluster.new_job(gc_stats_pipeline())
    job.join(timeout=120)
    return " / ".join(f"{count} ({gen2}) {seconds:.2f} s" for _, count, gen2, seconds in sorted(job.result("gc")))


def run_case(loaded: LoadedCluster, case: str, runs: int, settings: QuerySettings, guarantee: str,
             heap: bool, collect: bool) -> list[tuple]:
    """The case's runs; prints a line per run, returns ``(run, seconds, fetch seconds, count,
    RSS MiB per member)`` per run; each run's line has every member's collections (count, of
    them generation 2, seconds) during the run and the fetch."""
    query, sink = case.split("-")
    cluster = loaded.cluster
    config = {"processing_guarantee": guarantee, "snapshot_interval_ms": 1000}
    rows = []
    print(f"{case}: RSS MiB {' / '.join(f'{r:.0f}' for r in _rss_mib(cluster))}", flush=True)
    if heap:
        _print_heap(heap_stats(cluster, collect))
    _collections(cluster)
    for run in range(1, runs + 1):
        seconds, fetch, count = _run_once(cluster, query, sink, loaded.source, settings, config)
        rss = _rss_mib(cluster)
        rows.append((run, seconds, fetch, count, rss))
        print(f"{case} run {run}: {seconds:.2f} s" + (f" + fetch {fetch:.2f} s" if sink == "list" else "")
              + f", {count:,} results, RSS MiB {' / '.join(f'{r:.0f}' for r in rss)}, "
              f"collections {_collections(cluster)}, load {os.getloadavg()[0]:.1f}", flush=True)
        if heap:
            _print_heap(heap_stats(cluster, collect))
    return rows


def _print_heap(stats: list[dict]) -> None:
    for member in stats:
        grown = ", ".join(f"{name} +{count}" for name, count in member["grown"])
        collected = "" if member["collected"] is None else f", collected {member['collected']:,}"
        print(f"    member {member['member']}: tracked {member['tracked']:,} (frozen {member['frozen']:,}), "
              f"gc count {member['gc_count']}{collected}; grew: {grown or '-'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--guarantee", default="none", choices=("none", "at-least-once", "exactly-once"))
    parser.add_argument("--one-cluster", action="store_true", help="every case on the same cluster, in turn")
    parser.add_argument("--heap", action="store_true", help="ask every member what it holds after each run")
    parser.add_argument("--collect", action="store_true", help="with --heap: a full collection first")
    args = parser.parse_args()
    cases = args.cases.split(",")
    for case in cases:
        query, _, sink = case.partition("-")
        if query not in QUERIES or sink not in SINKS:
            parser.error(f"--cases: {case!r} is not <query>-<sink> (queries {sorted(QUERIES)}, sinks {SINKS})")
    config = GeneratorConfig(events=args.events)
    settings = QuerySettings.of(config)
    events = generated(config)
    gc.freeze()  # as nexmark.run does
    print(f"{len(events):,} events, {args.members} members, load {os.getloadavg()[0]:.1f}", flush=True)
    table = {}
    shared = LoadedCluster(events, args.members) if args.one_cluster else None
    try:
        for case in cases:
            loaded = shared or LoadedCluster(events, args.members)
            try:
                table[case] = run_case(loaded, case, args.runs, settings, args.guarantee, args.heap, args.collect)
            finally:
                if loaded is not shared:
                    loaded.close()
    finally:
        if shared is not None:
            shared.close()
    print("\n| case | " + " | ".join(f"run {run}" for run in range(1, args.runs + 1)) + " | last / first |")
    print("| --- " * (args.runs + 2) + "|")
    for case, rows in table.items():
        cells = [f"{seconds:.2f} s" + (f" + {fetch:.2f} s" if case.endswith("-list") else "")
                 + f", {'/'.join(f'{r:.0f}' for r in rss)} MiB" for _, seconds, fetch, _, rss in rows]
        print(f"| {case} | " + " | ".join(cells) + f" | {rows[-1][1] / rows[0][1]:.2f} |")
    print(f"\nload average (1 min) at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
