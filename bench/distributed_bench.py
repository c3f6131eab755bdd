"""Distributed edges and scaling across member processes (the cluster issue's benchmarks).

    python bench/distributed_bench.py [--items 2000000] [--mb 50]

1. One distributed edge between 2 member processes on loopback: every item crosses from
   member 0 to member 1 (an all-to-one edge whose key member 1 owns), small tuples and 1 KB
   items; items/s and MB/s of pickled payload.
2. Word count over a generated corpus file with 1 and 2 members (job time, start-up excluded).
3. Receiver memory under a slow consumer: the largest receiver buffer against the data sent.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "member"), ROOT, HERE]

import jet  # noqa: E402
from corpus import write_corpus  # noqa: E402
from jet.core import DAG, Edge, Processor  # noqa: E402
from jet.core.partitioner import murmur_partition  # noqa: E402
from jet.core.processors import noop_p  # noqa: E402
from jet.job_file import load_job, to_dag  # noqa: E402


def small_item(i: int):
    return (i, "word")


def kilobyte_item(i: int):
    return i.to_bytes(8, "big") * 128


class MemberZeroSource(Processor):
    """Emits ``count`` distinct items ``make(i)`` on member 0 only (distinct, so pickle's memo
    cannot shrink the payload)."""

    def __init__(self, count, make):
        self._next, self._count, self._make = 0, count, make

    def complete(self):
        if self.context.member_index != 0 or self._next >= self._count:
            return True
        end = min(self._next + 2048, self._count)
        if self.outbox.offer_chunk(list(map(self._make, range(self._next, end)))):
            self._next = end
        return False


def key_owned_by(member: int, members: int) -> str:
    """A key whose partition member ``member`` owns (owners are partition % member count)."""
    return next(f"k{i}" for i in range(10_000) if murmur_partition(f"k{i}") % members == member)


def edge_throughput(cluster, count: int, make) -> float:
    dag = DAG()
    source = dag.new_vertex("source", lambda: MemberZeroSource(count, make), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).all_to_one(key_owned_by(1, 2)).distributed())
    started = time.perf_counter()
    cluster.new_job(dag).join(timeout=600)
    return time.perf_counter() - started


def word_count_seconds(members: int, corpus: str, rounds: int) -> float:
    dag = to_dag(load_job(os.path.join(HERE, "wordcount_pipeline.py"), (corpus,)), 1)
    times = []
    with jet.local_cluster(members=members) as cluster:
        for _ in range(rounds):
            started = time.perf_counter()
            job = cluster.new_job(dag)
            job.join(timeout=600)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def receiver_memory(count: int) -> None:
    """Members in this process (tests/cluster/inprocess.py), so the receiver can be watched."""
    from tests.cluster.inprocess import InProcessCluster, SlowSink, run_over_one_distributed_edge
    probe: dict = {"samples": [], "received": []}
    cluster = InProcessCluster(2)
    try:
        run_over_one_distributed_edge(cluster, lambda: MemberZeroSource(count, small_item),
                                      lambda: SlowSink(probe), probe, 600)
    finally:
        cluster.close()
    sent = probe["sender"].sent_seq_bytes
    buffered = [sample[0] for sample in probe["samples"]]
    windows = [sample[1] for sample in probe["samples"]]
    print(f"slow consumer (~100k items/s), {count:,} items: {sent / 2**20:.1f} MiB of footprint sent,"
          f" receiver buffer peak {max(buffered) / 2**20:.2f} MiB, window"
          f" {max(windows)} -> {min(windows)} units of 64 KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2_000_000)
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with jet.local_cluster(members=2) as cluster:
        for label, make, count in (("small tuples (i, 'word')", small_item, args.items),
                                   ("1 KB items", kilobyte_item, args.items // 10)):
            seconds = min(edge_throughput(cluster, count, make) for _ in range(args.rounds))
            size = len(pickle.dumps([make(i) for i in range(1000)], 5)) / 1000
            print(f"distributed edge, {label:<26} {count / seconds:12,.0f} items/s"
                  f"  {count * size / seconds / 1e6:8.1f} MB/s", flush=True)

    with tempfile.TemporaryDirectory() as workdir:
        corpus = os.path.join(workdir, "corpus.txt")
        write_corpus(corpus, args.mb)
        with open(corpus, encoding="utf-8") as text:
            words = sum(len(line.split()) for line in text)
        one = word_count_seconds(1, corpus, args.rounds)
        two = word_count_seconds(2, corpus, args.rounds)
        print(f"word count {args.mb:g} MB, 1 member:  {one:6.2f} s {words / one:12,.0f} words/s")
        print(f"word count {args.mb:g} MB, 2 members: {two:6.2f} s {words / two:12,.0f} words/s"
              f"  ({one / two:.2f}x of 1 member)")
    receiver_memory(600_000)


if __name__ == "__main__":
    main()
