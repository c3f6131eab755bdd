"""Word count written with the core DAG API: the ten most frequent words of a text file.

    jet run examples/wordcount_dag.py examples/data/two-cities.txt

source (lines) -> tokenize -> count-prepare -(partitioned)-> count -(all-to-one)-> top-10 -> log
"""

import heapq
import re

from jet.core import DAG, HASH_PARTITIONER, AggregateOperation, Edge
from jet.core.aggregate import counting
from jet.core.functions import entry_key, whole_item
from jet.core.processors import (accumulate_by_key_p, aggregate_p, combine_by_key_p, fused_p,
                                 items_source_p, logger_sink_p)

WORD = re.compile(r"[a-z']+")


def top(n):
    """An aggregate keeping the n largest (word, count) entries by count."""
    return AggregateOperation(
        create=list,
        accumulate=lambda acc, entry: heapq.nlargest(n, acc + [entry], key=lambda e: e[1]),
        combine=lambda a, b: heapq.nlargest(n, a + b, key=lambda e: e[1]),
        finish=lambda acc: sorted(acc, key=lambda e: (-e[1], e[0])),
        name=f"top-{n}")


def dag(path="examples/data/two-cities.txt"):
    with open(path, encoding="utf-8") as text:
        lines = text.read().splitlines()
    dag = DAG()
    source = dag.new_vertex("lines", items_source_p(lines), 1)
    tokenize = dag.new_vertex("tokenize", fused_p([("map", str.lower), ("flat_map", WORD.findall)]))
    prepare = dag.new_vertex("count-prepare", accumulate_by_key_p(whole_item, counting()))
    count = dag.new_vertex("count", combine_by_key_p(counting()))
    top10 = dag.new_vertex("top-10", aggregate_p(top(10)), 1)
    log = dag.new_vertex("log", logger_sink_p(
        lambda ranking: "\n".join(f"{word:>12} {n}" for word, n in ranking)), 1)
    dag.edge(Edge.between(source, tokenize))
    dag.edge(Edge.between(tokenize, prepare).partitioned(whole_item, HASH_PARTITIONER))
    dag.edge(Edge.between(prepare, count).partitioned(entry_key).distributed())
    dag.edge(Edge.between(count, top10).all_to_one("top-10").distributed())
    dag.edge(Edge.between(top10, log))
    return dag
