"""The control plane on a local cluster: start-up, job round trip, word count across members,
time to fail a job when a member is SIGKILLed.

    python bench/cluster_bench.py [--members 1 2 3] [--lines 200000]

Every number is the median of ``--rounds`` (default 3), wall clock as the client sees it.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

import jet  # noqa: E402
from jet.core import DAG, HASH_PARTITIONER, Edge  # noqa: E402
from jet.core.aggregate import counting  # noqa: E402
from jet.core.functions import entry_key, whole_item  # noqa: E402
from jet.core.processors import (accumulate_by_key_p, combine_by_key_p, flat_map_p, items_source_p,  # noqa: E402
                                 map_p, noop_p)
from jet.execution.errors import JobFailedError  # noqa: E402
from tests.cluster.cluster_support import endless_source  # noqa: E402


def word_count(lines: list[str]) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(lines), 1)
    tokenize = dag.new_vertex("tokenize", flat_map_p(str.split))
    prepare = dag.new_vertex("prepare", accumulate_by_key_p(whole_item, counting()))
    combine = dag.new_vertex("combine", combine_by_key_p(counting()))
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, tokenize))
    dag.edge(Edge.between(tokenize, prepare).partitioned(whole_item, HASH_PARTITIONER))
    dag.edge(Edge.between(prepare, combine).partitioned(entry_key).distributed())
    dag.edge(Edge.between(combine, sink))
    return dag


def tiny() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p([1, 2, 3]), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lines = [f"the quick brown fox {i % 1000} jumps over the lazy dog {i % 77}" for i in range(args.lines)]
    words = sum(len(line.split()) for line in lines)
    print(f"{'members':>7} {'start s':>8} {'tiny job ms':>12} {'word count s':>13} {'words/s':>10} "
          f"{'kill->failed s':>15}")
    for members in args.members:
        starts, tinies, counts, kills = [], [], [], []
        for _ in range(args.rounds):
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as logs, jet.local_cluster(members, log_dir=logs) as cluster:
                starts.append(time.perf_counter() - started)
                tinies.append(min(timed(lambda: cluster.new_job(tiny()).join(30)) for _ in range(5)) * 1000)
                counts.append(timed(lambda: cluster.new_job(word_count(lines)).join(300)))
                if members > 1:
                    dag = DAG()
                    source = dag.new_vertex("source", endless_source(), 1)
                    sink = dag.new_vertex("sink", map_p(lambda x: x), 1)
                    dag.edge(Edge.between(source, sink).distributed())
                    job = cluster.new_job(dag)
                    while job.info()["status"] != "RUNNING":
                        time.sleep(0.01)
                    time.sleep(0.3)
                    killed = time.perf_counter()
                    cluster.members[-1].send_signal(signal.SIGKILL)
                    try:
                        job.join(30)
                    except JobFailedError:
                        kills.append(time.perf_counter() - killed)
        median = statistics.median
        kill = f"{median(kills):15.2f}" if kills else f"{'-':>15}"
        print(f"{members:>7} {median(starts):8.2f} {median(tinies):12.1f} {median(counts):13.2f} "
              f"{words / median(counts):10.0f} {kill}")


if __name__ == "__main__":
    main()
