"""Planner: turns a Pipeline into a core DAG, the way Jet's planner shapes it.

- Consecutive stateless stages (map, filter, flat-map, peek) with one downstream each, equal
  parallelism and no rebalance between them fuse into one vertex ``fused(a, b, ...)``.
- A grouped aggregation is ``<name>-prepare`` (local partitioned edge, fast local hash) then
  ``<name>`` (distributed partitioned edge on the stable hash of the key). When its key and
  values are columns of a Spark source's rows, the source's batches go whole to any local
  ``<name>-prepare``, which folds them in Arrow (``columnar_planning``).
- A global aggregation is ``<name>-prepare`` then one combining processor in the whole
  cluster over a distributed all-to-one edge.
- A hash join broadcasts the lookup side to ``<name>-collector`` on every member, which feeds
  ``<name>-joiner`` over a higher-priority edge: the whole table is in before the first item.
- ``map_batches`` fuses like a stateless stage and keeps batches intact between a Spark source
  and the stages that take them (``columnar_planning``).
- Preserve-order makes the edges into unkeyed stages isolated and caps their parallelism at
  the upstream's.

Streams (event time, windows, stateful mapping) are planned by ``stream_planner.StreamPlanner``;
both build the DAG through one ``dag_builder.DagBuilder``.
"""

from __future__ import annotations

import logging
from dataclasses import is_dataclass, replace
from typing import Any, Callable

from jet.core.dag import DAG, LOCAL_PARALLELISM_USE_DEFAULT
from jet.core.functions import entry_key
from jet.core.partitioner import FIRST_PROCESSOR_KEY, HASH_PARTITIONER
from jet.core.processors import (
    TransformP,
    accumulate_by_key_p,
    accumulate_p,
    aggregate_by_key_p,
    aggregate_p,
    combine_by_key_p,
    combine_p,
)
from jet.pipeline.co_group_planner import CoGroupPlanner
from jet.pipeline.columnar_planning import batch_chain_supplier, batch_function, batch_row_type, takes_columnar_input
from jet.pipeline.join_processors import HashJoinCollectP, HashJoinP, TimestampedHashJoinP
from jet.pipeline.source_sink import StreamSource
from jet.pipeline.dag_builder import DagBuilder
from jet.pipeline.enrichment_planning import plan_sort, plan_using_service
from jet.pipeline.enrichment_stages import SERVICE_KINDS
from jet.pipeline.item_forms import chain_output_pairs, pairs_out
from jet.pipeline.stream_planner import StreamPlanner, chain_p, watermark_frame_ms
from jet.pipeline.transforms import Transform


def _peek_step(format_fn: Callable[[Any], str], name: str) -> Callable[[Any], Any]:
    logger = logging.getLogger(f"jet.peek.{name}")

    def peek(item: Any) -> Any:
        logger.info("%s", format_fn(item))
        return item

    return peek


def _pass_through() -> TransformP:
    return TransformP(lambda chunk: chunk)


class Planner:
    """One planning of one pipeline: a :class:`DagBuilder` built stage by stage, the batch
    stages planned here, the stream stages by a :class:`StreamPlanner` over the same builder."""

    def __init__(self, pipeline: Any, default_local_parallelism: int = LOCAL_PARALLELISM_USE_DEFAULT) -> None:
        pipeline.validate()
        self._builder = DagBuilder(pipeline, default_local_parallelism, watermark_frame_ms(pipeline.transforms))
        self._streams = StreamPlanner(self._builder)
        stateless, stateful = self._plan_stateless, self._streams.plan_stateful
        co_group = CoGroupPlanner(self._builder)
        self._plan_by_kind: dict[str, Callable[[Transform], None]] = {
            "source": self._plan_source, "sink": self._plan_sink,
            "map": stateless, "filter": stateless, "flat_map": stateless, "peek": stateless,
            "map_batches": stateless, "group_aggregate": self._plan_group_aggregate,
            "aggregate": self._plan_aggregate, "hash_join": self._plan_hash_join, "merge": self._plan_merge,
            "add_timestamps": self._streams.plan_add_timestamps,
            "window_aggregate": self._streams.plan_window_aggregate,
            "map_stateful": stateful, "filter_stateful": stateful, "flat_map_stateful": stateful,
            "sort": lambda t: plan_sort(self._builder, t),
            **dict.fromkeys(SERVICE_KINDS, lambda t: plan_using_service(self._builder, t)),
            "window_co_aggregate": co_group.plan_window_co_aggregate, "interval_join": co_group.plan_interval_join,
            "co_aggregate": co_group.plan_co_aggregate, "hash_join_n": co_group.plan_hash_join_n,
        }

    def plan(self) -> DAG:
        builder = self._builder
        if any(isinstance(t.connector, StreamSource) for t in builder.transforms):
            builder.dag.is_streaming = True  # runs until cancelled: jet run, members' progress lines
        for transform in builder.transforms:
            if transform in builder.output_vertex:
                continue
            self._plan_by_kind[transform.kind](transform)
            builder.emits_pairs.setdefault(transform, pairs_out(transform))
        return builder.dag

    def _plan_source(self, transform: Transform) -> None:
        if transform.stream:
            self._streams.plan_stream_source(transform)
            return
        supplier = transform.connector.supplier
        if takes_columnar_input(transform) and is_dataclass(supplier) and hasattr(supplier, "columnar"):
            supplier = replace(supplier, columnar=True)  # its batches go to map_batches whole
        vertex = self._builder.vertex(self._builder.names[transform], supplier, self._builder.effective_lp(transform))
        self._builder.output_vertex[transform] = vertex

    def _plan_sink(self, transform: Transform) -> None:
        vertex = self._builder.vertex(self._builder.names[transform], transform.connector.supplier,
                              self._builder.effective_lp(transform))
        self._builder.connect_input(transform.inputs[0], vertex, pairs=False)
        self._builder.output_vertex[transform] = vertex

    def _fusable_chain(self, first: Transform) -> list[Transform]:
        chain = [first]
        current = first
        while len(current.downstream) == 1:
            nxt = current.downstream[0]
            if (not nxt.is_chainable or len(nxt.inputs) != 1 or nxt.inputs[0].rebalance
                    or nxt in self._builder.output_vertex
                    or self._builder.effective_lp(nxt) != self._builder.effective_lp(first)):
                break
            chain.append(nxt)
            current = nxt
        return chain

    def _plan_stateless(self, transform: Transform) -> None:
        chain = self._fusable_chain(transform)
        names = [self._builder.names[stage] for stage in chain]
        steps = []
        for stage, name in zip(chain, names):
            if stage.kind == "peek":
                steps.append(("map", _peek_step(stage.fn, name)))
            elif stage.kind == "map_batches":
                steps.append(("map_batches", batch_function(stage, name)))
            else:
                steps.append((stage.kind, stage.fn))
        name = names[0] if len(chain) == 1 else "fused(" + ", ".join(names) + ")"
        if any(stage.kind == "map_batches" for stage in chain):
            supplier, pairs_out = batch_chain_supplier(chain[-1], steps, names)
        else:
            pairs_in = self._builder.emits_pairs[transform.inputs[0].transform]
            pairs_out = chain_output_pairs(chain[-1], pairs_in)
            supplier = chain_p(steps, names, pairs_in, pairs_out)
        vertex = self._builder.vertex(name, supplier, self._builder.effective_lp(transform))
        self._builder.connect_input(transform.inputs[0], vertex)
        for stage in chain:
            self._builder.output_vertex[stage] = vertex
            self._builder.emits_pairs[stage] = pairs_out

    def _plan_group_aggregate(self, transform: Transform) -> None:
        name, operation, key_fn = self._builder.names[transform], transform.operation, transform.key_fn
        lp = self._builder.effective_lp(transform)
        source = transform.inputs[0]
        if operation.combine is None or source.rebalance:
            vertex = self._builder.vertex(name, aggregate_by_key_p(key_fn, operation), lp)
            self._builder.connect_input(source, vertex, keyed=True, pairs=False,
                                setup=lambda e: e.partitioned(key_fn).distributed())
        else:
            # whole batches go to any local first stage; rows to the one their key hashes to
            row_type = batch_row_type(transform, source.transform) if self._sends_batches(source.transform) else None
            prepare = self._builder.vertex(f"{name}-prepare", accumulate_by_key_p(key_fn, operation, row_type), lp)
            vertex = self._builder.vertex(name, combine_by_key_p(operation), lp)
            self._builder.connect_input(source, prepare, keyed=True, pairs=False,
                                setup=lambda e: e if row_type else e.partitioned(key_fn, HASH_PARTITIONER))
            self._builder.connect(prepare, vertex, lambda e: e.partitioned(entry_key).distributed())
        self._builder.output_vertex[transform] = vertex

    def _sends_batches(self, transform: Transform) -> bool:
        """Whether ``transform`` is planned as a source vertex that emits RecordBatches."""
        return (transform.kind == "source"
                and getattr(self._builder.output_vertex[transform].processor_supplier, "columnar", False) is True)

    def _plan_aggregate(self, transform: Transform) -> None:
        name, operation = self._builder.names[transform], transform.operation
        if operation.combine is None:
            vertex = self._builder.vertex(name, aggregate_p(operation), 1)
            self._builder.connect_input(transform.inputs[0], vertex, pairs=False,
                                        setup=lambda e: e.all_to_one(FIRST_PROCESSOR_KEY).distributed())
        else:
            prepare = self._builder.vertex(f"{name}-prepare", accumulate_p(operation),
                                   self._builder.effective_lp(transform))
            vertex = self._builder.vertex(name, combine_p(operation), 1)
            self._builder.connect_input(transform.inputs[0], prepare, pairs=False)
            self._builder.connect(prepare, vertex, lambda e: e.all_to_one(name).distributed())
        self._builder.output_vertex[transform] = vertex

    def _plan_hash_join(self, transform: Transform) -> None:
        name = self._builder.names[transform]
        primary, lookup = transform.inputs
        key_fn, other_key_fn, mapper = transform.key_fn, transform.other_key_fn, transform.fn
        joiner_class = TimestampedHashJoinP if self._builder.emits_pairs[primary.transform] else HashJoinP
        joiner = self._builder.vertex(f"{name}-joiner", lambda: joiner_class(key_fn, mapper),
                              self._builder.effective_lp(transform))
        collector = self._builder.vertex(f"{name}-collector", lambda: HashJoinCollectP(other_key_fn), 1)
        self._builder.connect_input(primary, joiner)
        self._builder.connect_input(lookup, collector, pairs=False,
                            setup=lambda e: e.broadcast().distributed())
        self._builder.connect(collector, joiner, lambda e: e.broadcast().priority(-1))
        self._builder.output_vertex[transform] = joiner

    def _plan_merge(self, transform: Transform) -> None:
        vertex = self._builder.vertex(self._builder.names[transform], _pass_through, self._builder.effective_lp(transform))
        pairs = pairs_out(transform)
        for source in transform.inputs:
            self._builder.connect_input(source, vertex, pairs=pairs)
        self._builder.output_vertex[transform] = vertex
