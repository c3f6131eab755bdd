"""The DAG a planning builds, and how stages' vertices are wired (shared by the planner's batch
and stream halves): unique stage names, vertices and their parallelism, ordinals, edges from a
stage's inputs, and the conversions between timestamped pairs and bare items."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from jet.core.dag import DAG, LOCAL_PARALLELISM_USE_DEFAULT, Vertex
from jet.core.edge import Edge
from jet.core.processors import TransformP
from jet.pipeline.item_forms import pairs_out, unwrap_chunk, wrap_chunk
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


class DagBuilder:
    """The DAG of one planning of one pipeline, built stage by stage."""

    def __init__(self, pipeline: Any, default_local_parallelism: int, frame_ms: int) -> None:
        self.pipeline = pipeline
        self.transforms: list[Transform] = pipeline.transforms
        self.names = unique_names(self.transforms)
        self.default_lp = default_local_parallelism
        self.dag = DAG()
        self.output_vertex: dict[Transform, Vertex] = {}
        """The vertex whose output is each planned stage's."""
        self.in_ordinals: dict[str, int] = {}
        self.out_ordinals: dict[str, int] = {}
        self.lp: dict[Transform, int] = {}
        self.emits_pairs: dict[Transform, bool] = {}
        """Whether each planned stage's vertex emits timestamped pairs."""
        self.converters: dict[Transform, Vertex] = {}
        self.frame_ms = frame_ms
        """The watermark throttling frame of the pipeline."""

    # -- parallelism ----------------------------------------------------------------------------
    def effective_lp(self, transform: Transform) -> int:
        """The stage's LP; with preserve-order, unkeyed stages are capped at the upstream's."""
        if transform in self.lp:
            return self.lp[transform]
        own = transform.local_parallelism
        if self.pipeline.preserve_order and transform.kind in ("map", "filter", "flat_map", "peek",
                                                                 "map_batches", "merge", "aggregate", "hash_join",
                                                                 "hash_join_n", "sink"):
            upstream = [self._resolved(self.effective_lp(i.transform)) for i in transform.inputs[:1]
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

    # -- vertices and edges ---------------------------------------------------------------------
    def vertex(self, name: str, supplier: Callable[[], Any], lp: int) -> Vertex:
        lp = lp if lp < (1 << 30) else LOCAL_PARALLELISM_USE_DEFAULT
        return self.dag.new_vertex(name, supplier, lp)

    def connect(self, source: Vertex, dest: Vertex, setup: Callable[[Edge], Edge] = lambda e: e) -> Edge:
        out = self.out_ordinals.get(source.name, 0)
        into = self.in_ordinals.get(dest.name, 0)
        self.out_ordinals[source.name] = out + 1
        self.in_ordinals[dest.name] = into + 1
        edge = setup(Edge.from_(source, out).to(dest, into))
        self.dag.edge(edge)
        return edge

    def connect_input(self, source: Input, dest: Vertex, keyed: bool = False,
                      setup: Callable[[Edge], Edge] | None = None, pairs: bool | None = None) -> Edge:
        """The edge from an input's upstream vertex: custom (the stage's own routing comes
        first), rebalanced, isolated or unicast. ``pairs`` is the representation the stage
        takes (timestamped pairs or bare items; None: either), converted when needed."""
        if pairs is None:
            upstream = self.output_vertex[source.transform]
        else:
            upstream = self.converted_output(source.transform, pairs)
        if setup is not None:
            return self.connect(upstream, dest, setup)
        if source.rebalance:
            if source.rebalance_key is not None:
                return self.connect(upstream, dest,
                                    lambda e: e.partitioned(source.rebalance_key).distributed())
            return self.connect(upstream, dest, lambda e: e.distributed())
        if self.pipeline.preserve_order and not keyed:
            return self.connect(upstream, dest, lambda e: e.isolated())
        return self.connect(upstream, dest)

    def converted_output(self, transform: Transform, pairs: bool) -> Vertex:
        """The vertex whose output is ``transform``'s in the representation ``pairs``."""
        vertex = self.output_vertex[transform]
        if self.emits_pairs[transform] == pairs:
            return vertex
        converter = self.converters.get(transform)
        if converter is None:
            chunk_fn = wrap_chunk if pairs else unwrap_chunk
            converter = self.vertex(f"{vertex.name}-{'wrap' if pairs else 'unwrap'}",
                                    lambda: TransformP(chunk_fn), vertex.local_parallelism)
            self.connect(vertex, converter, lambda e: e.isolated())
            self.converters[transform] = converter
        return converter

    def planned(self, transform: Transform, vertex: Vertex) -> None:
        """``transform`` is planned: ``vertex`` emits its output (pairs as its kind says)."""
        self.output_vertex[transform] = vertex
        self.emits_pairs.setdefault(transform, pairs_out(transform))

    def throttled(self, policy: Any) -> Any:
        """An event-time policy throttled to the pipeline's watermark frame."""
        return replace(policy, frame_size_ms=self.frame_ms, frame_offset_ms=0)
