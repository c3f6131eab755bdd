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

Streams (event time, windows, stateful mapping) are planned by ``stream_planner.StreamPlanning``.
"""

from __future__ import annotations

import logging
from dataclasses import is_dataclass, replace
from typing import Any, Callable

from jet.pipeline.source_sink import StreamSource
from jet.core.dag import DAG, LOCAL_PARALLELISM_USE_DEFAULT, Vertex
from jet.core.edge import Edge
from jet.core.functions import entry_key
from jet.core.partitioner import HASH_PARTITIONER
from jet.core.processors import (TransformP, accumulate_by_key_p, accumulate_p, aggregate_by_key_p,
                                 aggregate_p, combine_by_key_p, combine_p)
from jet.pipeline.columnar_planning import (BatchChainPlanning, batch_function, batch_row_type,
                                            takes_columnar_input)
from jet.pipeline.join_processors import HashJoinCollectP, HashJoinP, TimestampedHashJoinP
from jet.pipeline.stream_planner import StreamPlanning, chain_p, watermark_frame_ms
from jet.pipeline.transforms import Input, Transform


def unique_names(transforms: list[Transform]) -> dict[Transform, str]:
    """Stage names made unique by suffixes -2, -3, ... in definition order."""
    names: dict[Transform, str] = {}
    used: set[str] = set()
    for transform in transforms:
        name, suffix = transform.name, 2
        while name in used:
            name = f"{transform.name}-{suffix}"
            suffix += 1
        used.add(name)
        names[transform] = name
    return names


def _peek_step(format_fn: Callable[[Any], str], name: str) -> Callable[[Any], Any]:
    logger = logging.getLogger(f"jet.peek.{name}")

    def peek(item: Any) -> Any:
        logger.info("%s", format_fn(item))
        return item

    return peek


def _pass_through() -> TransformP:
    return TransformP(lambda chunk: chunk)


class Planner(BatchChainPlanning, StreamPlanning):
    """One planning of one pipeline."""

    def __init__(self, pipeline: Any, default_local_parallelism: int = LOCAL_PARALLELISM_USE_DEFAULT) -> None:
        pipeline.validate()
        self.pipeline = pipeline
        self.transforms: list[Transform] = pipeline.transforms
        self.names = unique_names(self.transforms)
        self.default_lp = default_local_parallelism
        self.dag = DAG()
        self.output_vertex: dict[Transform, Vertex] = {}
        self.input_vertex: dict[Transform, Vertex] = {}
        self.in_ordinals: dict[str, int] = {}
        self.out_ordinals: dict[str, int] = {}
        self.lp: dict[Transform, int] = {}
        self.emits_pairs: dict[Transform, bool] = {}
        self.converters: dict[Transform, Vertex] = {}
        self.frame_ms = watermark_frame_ms(self.transforms)

    # -- parallelism ----------------------------------------------------------------------------
    def _effective_lp(self, transform: Transform) -> int:
        """The stage's LP; with preserve-order, unkeyed stages are capped at the upstream's."""
        if transform in self.lp:
            return self.lp[transform]
        own = transform.local_parallelism
        if self.pipeline.preserve_order and transform.kind in ("map", "filter", "flat_map", "peek",
                                                                 "map_batches", "merge", "aggregate", "hash_join", "sink"):
            upstream = [self._resolved(self._effective_lp(i.transform)) for i in transform.inputs[:1]
                        if not i.rebalance]
            if upstream:
                resolved_own = self._resolved(own)
                own = min(upstream + [resolved_own])
        self.lp[transform] = own
        return own

    def _resolved(self, lp: int) -> int:
        if lp != LOCAL_PARALLELISM_USE_DEFAULT:
            return lp
        return self.default_lp if self.default_lp != LOCAL_PARALLELISM_USE_DEFAULT else 1 << 30

    # -- building -------------------------------------------------------------------------------
    def plan(self) -> DAG:
        if any(isinstance(t.connector, StreamSource) for t in self.transforms):
            self.dag.is_streaming = True  # runs until cancelled: jet run, members' progress lines
        for transform in self.transforms:
            if transform in self.output_vertex:
                continue
            handler = getattr(self, f"_plan_{transform.kind}")
            handler(transform)
            self.emits_pairs.setdefault(transform, self.pairs_out(transform))
        return self.dag

    def _vertex(self, name: str, supplier: Callable[[], Any], lp: int) -> Vertex:
        lp = lp if lp < (1 << 30) else LOCAL_PARALLELISM_USE_DEFAULT
        return self.dag.new_vertex(name, supplier, lp)

    def _connect(self, source: Vertex, dest: Vertex, setup: Callable[[Edge], Edge] = lambda e: e) -> Edge:
        out = self.out_ordinals.get(source.name, 0)
        into = self.in_ordinals.get(dest.name, 0)
        self.out_ordinals[source.name] = out + 1
        self.in_ordinals[dest.name] = into + 1
        edge = setup(Edge.from_(source, out).to(dest, into))
        self.dag.edge(edge)
        return edge

    def _connect_input(self, source: Input, dest: Vertex, keyed: bool = False,
                       setup: Callable[[Edge], Edge] | None = None, pairs: bool | None = None) -> Edge:
        """The edge from an input's upstream vertex: custom (the stage's own routing comes
        first), rebalanced, isolated or unicast. ``pairs`` is the representation the stage
        takes (timestamped pairs or bare items; None: either), converted when needed."""
        if pairs is None:
            upstream = self.output_vertex[source.transform]
        else:
            upstream = self.converted_output(source.transform, pairs)
        if setup is not None:
            return self._connect(upstream, dest, setup)
        if source.rebalance:
            if source.rebalance_key is not None:
                return self._connect(upstream, dest,
                                     lambda e: e.partitioned(source.rebalance_key).distributed())
            return self._connect(upstream, dest, lambda e: e.distributed())
        if self.pipeline.preserve_order and not keyed:
            return self._connect(upstream, dest, lambda e: e.isolated())
        return self._connect(upstream, dest)

    def _plan_source(self, transform: Transform) -> None:
        if transform.stream:
            self._plan_stream_source(transform)
            return
        supplier = transform.connector.supplier
        if takes_columnar_input(transform) and is_dataclass(supplier) and hasattr(supplier, "columnar"):
            supplier = replace(supplier, columnar=True)  # its batches go to map_batches whole
        vertex = self._vertex(self.names[transform], supplier, self._effective_lp(transform))
        self.output_vertex[transform] = vertex

    def _plan_sink(self, transform: Transform) -> None:
        vertex = self._vertex(self.names[transform], transform.connector.supplier,
                              self._effective_lp(transform))
        self._connect_input(transform.inputs[0], vertex, pairs=False)
        self.output_vertex[transform] = vertex

    def _fusable_chain(self, first: Transform) -> list[Transform]:
        chain = [first]
        current = first
        while len(current.downstream) == 1:
            nxt = current.downstream[0]
            if (not nxt.is_chainable or len(nxt.inputs) != 1 or nxt.inputs[0].rebalance
                    or nxt in self.output_vertex
                    or self._effective_lp(nxt) != self._effective_lp(first)):
                break
            chain.append(nxt)
            current = nxt
        return chain

    def _plan_stateless(self, transform: Transform) -> None:
        chain = self._fusable_chain(transform)
        names = [self.names[stage] for stage in chain]
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
            supplier, pairs_out = self._batch_chain_supplier(chain[-1], steps, names)
        else:
            pairs_in = self.emits_pairs[transform.inputs[0].transform]
            pairs_out = self.chain_output_pairs(chain[-1], pairs_in)
            supplier = chain_p(steps, names, pairs_in, pairs_out)
        vertex = self._vertex(name, supplier, self._effective_lp(transform))
        self._connect_input(transform.inputs[0], vertex)
        for stage in chain:
            self.output_vertex[stage] = vertex
            self.emits_pairs[stage] = pairs_out

    _plan_map = _plan_filter = _plan_flat_map = _plan_peek = _plan_map_batches = _plan_stateless

    def _plan_group_aggregate(self, transform: Transform) -> None:
        name, operation, key_fn = self.names[transform], transform.operation, transform.key_fn
        lp = self._effective_lp(transform)
        source = transform.inputs[0]
        if operation.combine is None or source.rebalance:
            vertex = self._vertex(name, aggregate_by_key_p(key_fn, operation), lp)
            self._connect_input(source, vertex, keyed=True, pairs=False,
                                setup=lambda e: e.partitioned(key_fn).distributed())
        else:
            # whole batches go to any local first stage; rows to the one their key hashes to
            row_type = batch_row_type(transform, source.transform) if self._sends_batches(source.transform) else None
            prepare = self._vertex(f"{name}-prepare", accumulate_by_key_p(key_fn, operation, row_type), lp)
            vertex = self._vertex(name, combine_by_key_p(operation), lp)
            self._connect_input(source, prepare, keyed=True, pairs=False,
                                setup=lambda e: e if row_type else e.partitioned(key_fn, HASH_PARTITIONER))
            self._connect(prepare, vertex, lambda e: e.partitioned(entry_key).distributed())
        self.output_vertex[transform] = vertex

    def _sends_batches(self, transform: Transform) -> bool:
        """Whether ``transform`` is planned as a source vertex that emits RecordBatches."""
        return (transform.kind == "source"
                and getattr(self.output_vertex[transform].processor_supplier, "columnar", False) is True)

    def _plan_aggregate(self, transform: Transform) -> None:
        name, operation = self.names[transform], transform.operation
        if operation.combine is None:
            vertex = self._vertex(name, aggregate_p(operation), 1)
            self._connect_input(transform.inputs[0], vertex, pairs=False,
                                setup=lambda e: e.all_to_one(name).distributed())
        else:
            prepare = self._vertex(f"{name}-prepare", accumulate_p(operation),
                                   self._effective_lp(transform))
            vertex = self._vertex(name, combine_p(operation), 1)
            self._connect_input(transform.inputs[0], prepare, pairs=False)
            self._connect(prepare, vertex, lambda e: e.all_to_one(name).distributed())
        self.output_vertex[transform] = vertex

    def _plan_hash_join(self, transform: Transform) -> None:
        name = self.names[transform]
        primary, lookup = transform.inputs
        key_fn, other_key_fn, mapper = transform.key_fn, transform.other_key_fn, transform.fn
        joiner_class = TimestampedHashJoinP if self.emits_pairs[primary.transform] else HashJoinP
        joiner = self._vertex(f"{name}-joiner", lambda: joiner_class(key_fn, mapper),
                              self._effective_lp(transform))
        collector = self._vertex(f"{name}-collector", lambda: HashJoinCollectP(other_key_fn), 1)
        self._connect_input(primary, joiner)
        self._connect_input(lookup, collector, pairs=False,
                            setup=lambda e: e.broadcast().distributed())
        self._connect(collector, joiner, lambda e: e.broadcast().priority(-1))
        self.output_vertex[transform] = joiner

    def _plan_merge(self, transform: Transform) -> None:
        vertex = self._vertex(self.names[transform], _pass_through, self._effective_lp(transform))
        pairs = self.pairs_out(transform)
        for source in transform.inputs:
            self._connect_input(source, vertex, pairs=pairs)
        self.output_vertex[transform] = vertex
