"""Benchmarks of the one-member engine (issue: the core engine).

    python bench/core_bench.py --mb 20

1. items/s through source -> 4 map vertices -> sink over local edges, one worker thread;
2. word count with the core API on one member against a plain single-threaded Python loop
   (collections.Counter over the same tokenisation), in the same run.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "member"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import generate_lines  # noqa: E402

from jet.core import DAG, HASH_PARTITIONER, Edge  # noqa: E402
from jet.core.aggregate import counting  # noqa: E402
from jet.core.functions import entry_key, whole_item  # noqa: E402
from jet.core.processors import (accumulate_by_key_p, combine_by_key_p, fused_p, items_source_p,  # noqa: E402
                                 map_p, noop_p, list_sink_p)
from jet.execution import execute  # noqa: E402


def tokenize(line: str) -> list[str]:
    return line.lower().split()


def map_chain_items_per_second(count: int, threads: int) -> float:
    dag = DAG()
    previous = dag.new_vertex("source", items_source_p(range(count)), 1)
    for i in range(4):
        vertex = dag.new_vertex(f"map-{i}", map_p(lambda x: x + 1), 1)
        dag.edge(Edge.between(previous, vertex))
        previous = vertex
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(previous, sink))
    started = time.perf_counter()
    execute(dag, cooperative_threads=threads)
    return count / (time.perf_counter() - started)


def word_count_dag(lines: list[str], result: list) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(lines), 1)
    tokenizer = dag.new_vertex("tokenize", fused_p([("map", str.lower), ("flat_map", str.split)]))
    prepare = dag.new_vertex("count-prepare", accumulate_by_key_p(whole_item, counting()))
    combine = dag.new_vertex("count", combine_by_key_p(counting()))
    sink = dag.new_vertex("sink", list_sink_p(result), 1)
    dag.edge(Edge.between(source, tokenizer))
    dag.edge(Edge.between(tokenizer, prepare).partitioned(whole_item, HASH_PARTITIONER))
    dag.edge(Edge.between(prepare, combine).partitioned(entry_key).distributed())
    dag.edge(Edge.between(combine, sink))
    return dag


def engine_word_count(lines: list[str], threads: int) -> tuple[float, dict]:
    result: list = []
    started = time.perf_counter()
    execute(word_count_dag(lines, result), cooperative_threads=threads)
    return time.perf_counter() - started, dict(result)


def plain_word_count(lines: list[str]) -> tuple[float, Counter]:
    started = time.perf_counter()
    counts: Counter = Counter()
    for line in lines:
        counts.update(tokenize(line))
    return time.perf_counter() - started, counts


def best_of(runs: int, fn, *args):
    results = []
    for _ in range(runs):
        gc.collect()
        results.append(fn(*args))
    return min(results, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size")
    parser.add_argument("--items", type=int, default=2_000_000, help="items for the map chain")
    parser.add_argument("--runs", type=int, default=3, help="best of N runs")
    args = parser.parse_args()

    rate = max(map_chain_items_per_second(args.items, 1) for _ in range(args.runs))
    print(f"source -> 4 x map -> sink, 1 thread: {rate:,.0f} items/s")

    lines = generate_lines(int(args.mb * 1_000_000))
    words = sum(len(tokenize(line)) for line in lines)
    plain_s, expected = best_of(args.runs, plain_word_count, lines)
    print(f"corpus: {args.mb:g} MB, {len(lines):,} lines, {words:,} words")
    print(f"plain Counter loop:              {plain_s:6.2f} s  {words / plain_s:12,.0f} words/s")
    for threads in (1, 2):
        engine_s, counts = best_of(args.runs, engine_word_count, lines, threads)
        assert counts == expected, "the engine's word count differs from the plain loop's"
        print(f"engine word count, {threads} thread(s):   {engine_s:6.2f} s  {words / engine_s:12,.0f}"
              f" words/s  ({plain_s / engine_s:.0%} of the plain loop)")


if __name__ == "__main__":
    main()
