"""The same work, in more processes than cores: how much more CPU does it cost?

    python3 bench/contention_bench.py [--processes 1 2 4 8 16] [--rounds 200] [--plan-members 16]

A tiny job wakes every member at once. To tell what grows with the member count in our code from
what grows because k processes share this machine's cores, each of P processes here does a fixed
piece of work at the same instant, ``--rounds`` times with a pause between (as members do for a
tiny job), and measures the CPU it took (``time.thread_time``). The work does not depend on P:

- ``init``: what a member other than the coordinator does for a tiny job's ``init``: unpickle the
  DAG, build its :class:`DistributedExecutionPlan` as member 1 of ``--plan-members`` members, and
  its tasklets (the bench's tiny DAG: source -> distributed edge -> sink);
- ``loop``: a plain Python loop of fixed length, as a control.

Prints, per P, the median CPU microseconds per burst (over all processes and rounds) of each work.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

import cloudpickle  # noqa: E402
from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners  # noqa: E402
from jet.cluster.edges.network import MemberNetwork  # noqa: E402
from jet.core import DAG, Edge  # noqa: E402
from jet.core.processors import items_source_p, noop_p  # noqa: E402
from jet.execution.plan import MemberTopology  # noqa: E402

PAUSE_S = 0.02


def tiny_dag_bytes() -> bytes:
    """The member-overhead bench's tiny DAG, pickled as the coordinator sends it."""
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(10))), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return cloudpickle.dumps(dag)


def init_work(dag_bytes: bytes, members: int):
    """A callable doing one tiny ``init``'s plan work as member 1 of ``members``."""
    network = MemberNetwork(1, lambda peer, frame: None)
    topology = MemberTopology(1, members, tuple(partition_owners(members)))

    def work() -> None:
        plan = DistributedExecutionPlan(cloudpickle.loads(dag_bytes), network=network, execution_id=1,
                                        topology=topology)
        plan.build()
    return work


def loop_work() -> None:
    total = 0
    for i in range(20_000):
        total += i * i


def worker(barrier, rounds: int, dag_bytes: bytes, members: int, results) -> None:
    works = {"init": init_work(dag_bytes, members), "loop": loop_work}
    for work in works.values():  # warm
        work()
    spent: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, work in works.items():
            barrier.wait()
            started = time.thread_time()
            work()
            spent[name].append(time.thread_time() - started)
    results.put(spent)


def measure(processes: int, rounds: int, members: int) -> dict[str, float]:
    """Median CPU microseconds per burst of each work, over all processes and rounds."""
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(processes + 1)
    results = context.Queue()
    dag_bytes = tiny_dag_bytes()
    workers = [context.Process(target=worker, args=(barrier, rounds, dag_bytes, members, results))
               for _ in range(processes)]
    for process in workers:
        process.start()
    for _ in range(rounds * 2):
        barrier.wait()
        time.sleep(PAUSE_S)
    spent = [results.get() for _ in workers]
    for process in workers:
        process.join()
    return {name: statistics.median(t for s in spent for t in s[name]) * 1e6 for name in spent[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--plan-members", type=int, default=16)
    args = parser.parse_args()
    print(f"{'processes':>9} {'init us':>8} {'loop us':>8}   (median CPU per burst; the work is the same for every P)")
    for processes in args.processes:
        result = measure(processes, args.rounds, args.plan_members)
        print(f"{processes:>9} {result['init']:>8.0f} {result['loop']:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
