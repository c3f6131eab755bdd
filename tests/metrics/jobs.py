"""The jobs the metrics tests run, and their oracles computed in plain Python."""

from __future__ import annotations

import time

from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge, Processor
from jet.core.edge import EdgeConfig
from jet.core.functions import whole_item
from jet.core.processors import aggregate_by_key_p, flat_map_p, map_p, noop_p
from jet.core.processors.sources import items_source_p
from jet.pipeline.aggregate_operations import AggregateOperations

LINES = [f"the quick brown fox {i % 7} jumps over the lazy dog {i % 13} and the end" for i in range(3_000)]


def word_count_oracle(lines: list[str]) -> dict[str, int]:
    """What each vertex of :func:`word_count_dag` must count, from the input alone."""
    words = [word for line in lines for word in line.split()]
    return {"lines": len(lines), "words": len(words), "distinct": len(set(words))}


def word_count_dag(lines: list[str] = LINES) -> DAG:
    """lines -> words (flat_map) -> counts (by word, over a distributed partitioned edge) -> sink."""
    dag = DAG()
    source = dag.new_vertex("lines", items_source_p(lines), 2)
    words = dag.new_vertex("words", flat_map_p(str.split), 2)
    counts = dag.new_vertex("counts", aggregate_by_key_p(whole_item, AggregateOperations.counting()), 2)
    sink = dag.new_vertex("sink", lambda: ListResultSinkP("counts"), 1)
    dag.edge(Edge.between(source, words))
    dag.edge(Edge.between(words, counts).partitioned(whole_item).distributed())
    dag.edge(Edge.between(counts, sink))
    return dag


class SlowSinkP(Processor):
    """A sink that sleeps for every chunk it takes, on a thread of its own."""

    is_cooperative = False

    def process(self, ordinal, inbox) -> None:
        time.sleep(0.002)
        inbox.take_chunk(64)


def back_pressure_dag(count: int = 40_000) -> DAG:
    """numbers -> (ordinal 0) relay -> slow sink, and numbers -> (ordinal 1) fast sink: the relay is
    held back by the slow sink; the fast sink never holds the numbers back."""
    dag = DAG()
    numbers = dag.new_vertex("numbers", items_source_p(range(count)), 1)
    relay = dag.new_vertex("relay", map_p(lambda x: x), 1)
    slow = dag.new_vertex("slow_sink", SlowSinkP, 1)
    fast = dag.new_vertex("fast_sink", noop_p(), 1)
    dag.edge(Edge.from_(numbers, 0).to(relay))
    dag.edge(Edge.from_(numbers, 1).to(fast))
    # Jet's small queue and bucket: the relay fills them long before its items run out
    dag.edge(Edge.between(relay, slow).set_config(EdgeConfig(queue_size=1024, outbox_capacity=2048)))
    return dag


KEYS = 10


def snapshotting_dag() -> DAG:
    """Endless numbers counted by ``n % KEYS`` (a distributed partitioned edge): the counting
    vertex's state is one entry per key, on the processor that owns the key."""
    from tests.cluster.cluster_support import endless_source

    dag = DAG()
    dag.is_streaming = True
    numbers = dag.new_vertex("numbers", endless_source(), 1)
    counts = dag.new_vertex("counts", aggregate_by_key_p(lambda n: n % KEYS, AggregateOperations.counting()), 2)
    dag.edge(Edge.between(numbers, counts).partitioned(lambda n: n % KEYS).distributed())
    return dag
