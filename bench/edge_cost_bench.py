"""What a distributed edge costs each member per job, as the member count grows.

    python bench/edge_cost_bench.py [--members 8 16] [--jobs 150]

For each member count, starts ``jet.local_cluster(k)`` and runs back to back tiny jobs (ten
items from a source, through ``edges - 1`` maps, into a sink) whose edges are all local
(``edges`` 0) or all distributed (1 or 2), each kind twice, alternating, after five warm-up
jobs. Prints the wall time per job and the CPU of every member process (all threads, from
``/proc/<pid>/stat``) per member per job, and apart from it the coordinator's (member 0's) and
the mean of the others'. The difference between 0 and 1 or 2 distributed edges, divided by
``k - 1``, is what one distributed edge costs per remote member per job: its sender and receiver
tasklets, their queues, their frames and figures. The coordinator's CPU per job is the part of a
job's round trip that one process does for every member (plans sent, reports taken): on a
machine with a core per member, the round trip is that plus one member's own share.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member")]

import jet  # noqa: E402
from jet.core.dag import DAG  # noqa: E402
from jet.core.edge import Edge  # noqa: E402
from jet.core.processors import items_source_p, map_p, noop_p  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _same(item):
    return item


def chain(distributed_edges: int) -> DAG:
    """source -> map ... -> sink: ``max(1, n)`` edges, distributed when ``n`` > 0."""
    dag = DAG()
    previous = dag.new_vertex("source", items_source_p(list(range(10))), 1)
    vertices = [dag.new_vertex(f"map{i}", map_p(_same), 1) for i in range(max(distributed_edges, 1) - 1)]
    for vertex in vertices + [dag.new_vertex("sink", noop_p(), 1)]:
        edge = Edge.between(previous, vertex)
        dag.edge(edge.distributed() if distributed_edges else edge)
        previous = vertex
    return dag


def process_cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--jobs", type=int, default=150)
    args = parser.parse_args()
    print("| members | distributed edges | ms per job | CPU ms per member per job | coordinator | other members |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in args.members:
        with tempfile.TemporaryDirectory() as logs, jet.local_cluster(k, log_dir=logs) as cluster:
            pids = [member.pid for member in cluster.members]
            for edges in (0, 1, 2, 0, 1, 2):
                for _ in range(5):
                    cluster.new_job(chain(edges)).join(60)
                time.sleep(0.5)
                coordinator_before, others_before = process_cpu_s(pids[:1]), process_cpu_s(pids[1:])
                started = time.perf_counter()
                for _ in range(args.jobs):
                    cluster.new_job(chain(edges)).join(60)
                elapsed = time.perf_counter() - started
                coordinator = process_cpu_s(pids[:1]) - coordinator_before
                others = process_cpu_s(pids[1:]) - others_before
                per_job_ms = 1000 / args.jobs
                print(f"| {k} | {edges} | {elapsed * per_job_ms:.1f} | {(coordinator + others) * per_job_ms / k:.2f} | "
                      f"{coordinator * per_job_ms:.2f} | {others * per_job_ms / max(k - 1, 1):.2f} |", flush=True)


if __name__ == "__main__":
    main()
