"""How the planner shapes streams, as Jet 4.x does (mixed into ``Planner``).

- A stream source with a ``policy_supplier`` gets the event-time policy and emits timestamped
  pairs and watermarks itself; any other gets ``<name>-add-timestamps``
  (``insert_watermarks_p``, same parallelism, isolated edge).
- Watermarks are throttled to frames: the frame size is the gcd of what the windows and TTLs
  downstream prefer (Jet's preferred watermark strides), 1000 ms when nothing does, and
  gcd(frame, 1000) above 1000 ms; every policy of the pipeline gets it.
- Tumbling and sliding windows are ``<name>-prepare`` (``accumulate_by_frame_p``, on a local
  edge) then ``<name>`` (``combine_to_sliding_window_p``, across members) when the aggregation
  can combine and neither early results nor a rebalance say otherwise; else one stage
  (``aggregate_to_sliding_window_p``). Session windows are one stage. Keyed stages partition by
  key across members; non-keyed ones end in one processor of the cluster.
- Stateful mapping is one ``transform_stateful_p`` stage partitioned by key (global: one
  processor).

Items of a timestamped stream travel as ``(timestamp, item)`` pairs. Where a vertex needs the
other representation (a sink takes bare items, a stateful stage on a stream without timestamps
takes pairs) the conversion is fused into the upstream chain of stateless stages when that
chain feeds only this vertex, and is a small vertex of its own (``<upstream>-unwrap`` /
``<upstream>-wrap``) otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce
from itertools import repeat
from math import gcd
from operator import attrgetter, itemgetter
from typing import Any, Callable, Sequence

from jet.core.chain_contract import ChainContract
from jet.core.dag import Vertex
from jet.core.functions import whole_item
from jet.core.partitioner import HASH_PARTITIONER
from jet.core.processors import TransformP, compile_chain
from jet.core.processors.transform import compile_timestamped_chain
from jet.core.special_items import MIN_TIMESTAMP
from jet.pipeline.transforms import STATEFUL_KINDS, Transform
from jet.pipeline.window_definition import SessionWindowDefinition

#: The throttling frame when no stage asks for one (Jet keeps watermarks for latency metrics).
DEFAULT_WATERMARK_FRAME_MS = 1000

_item_of = itemgetter(1)
_key_of_frame_result = attrgetter("key")


def unwrap_chunk(chunk: list) -> list:
    """The items of a chunk of timestamped pairs."""
    return list(map(_item_of, chunk))


def wrap_chunk(chunk: list) -> list:
    """A chunk of bare items as pairs without event time (MIN_TIMESTAMP)."""
    return list(zip(repeat(MIN_TIMESTAMP), chunk))


def key_of_pair(key_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``key_fn`` applied to the item of a timestamped pair (no extra call for ``whole_item``)."""
    if key_fn is whole_item:
        return _item_of
    return lambda pair: key_fn(pair[1])


def watermark_frame_ms(transforms: Sequence[Transform]) -> int:
    """Jet's watermark throttling frame for a pipeline: gcd of the preferred strides."""
    strides = [t.window.preferred_watermark_stride_ms for t in transforms if t.kind == "window_aggregate"]
    strides += [max(1, t.ttl_ms // 10) for t in transforms
                if t.kind in STATEFUL_KINDS and t.key_fn is not None and t.ttl_ms > 0]
    frame = reduce(gcd, strides, 0)
    if frame == 0:
        return DEFAULT_WATERMARK_FRAME_MS
    return gcd(frame, DEFAULT_WATERMARK_FRAME_MS) if frame > DEFAULT_WATERMARK_FRAME_MS else frame


def _without_key(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    return lambda state, _key, item: fn(state, item)


class _ContractOverItems:
    """Explains the failure of a chain over pairs by running the chain's contract on the items."""

    def __init__(self, contract: ChainContract) -> None:
        self._contract = contract

    def broken_by(self, chunk: list, error: BaseException) -> Any:
        return self._contract.broken_by(unwrap_chunk(chunk), error)


def chain_p(steps: list, stage_names: list[str], pairs_in: bool,
            pairs_out: bool) -> Callable[[], TransformP]:
    """The supplier of a fused chain of stateless steps over bare items or pairs, converting
    its output to pairs or bare items as ``pairs_out`` says."""
    contract = ChainContract(steps, stage_names)
    if pairs_in:
        chunk_fn = compile_timestamped_chain(steps, unwrap=not pairs_out)
        over_items = _ContractOverItems(contract)
        return lambda: TransformP(chunk_fn, over_items)
    bare_fn = compile_chain(steps)
    chunk_fn = (lambda chunk: wrap_chunk(bare_fn(chunk))) if pairs_out else bare_fn
    return lambda: TransformP(chunk_fn, contract)


class StreamPlanning:
    """The stream half of the planner; ``Planner`` provides the vertices and edges."""

    names: dict[Transform, str]
    output_vertex: dict[Transform, Vertex]
    emits_pairs: dict[Transform, bool]
    converters: dict[Transform, Vertex]
    frame_ms: int

    # -- representation of items: pairs or bare ---------------------------------------------------
    def pairs_out(self, transform: Transform) -> bool:
        """Whether the stage's items are (timestamp, item) pairs."""
        kind = transform.kind
        if kind == "source":
            return transform.event_time_policy is not None
        if kind in ("add_timestamps", "window_aggregate") or kind in STATEFUL_KINDS:
            return True
        if kind in ("aggregate", "group_aggregate", "sink"):
            return False
        if kind == "merge":
            return any(self.pairs_out(source.transform) for source in transform.inputs)
        return self.pairs_out(transform.inputs[0].transform)

    def input_needs_pairs(self, transform: Transform, index: int) -> bool | None:
        """Whether input ``index`` of the stage must be pairs (True), bare (False) or either."""
        kind = transform.kind
        if kind == "window_aggregate" or kind in STATEFUL_KINDS:
            return True
        if kind == "merge":
            return self.pairs_out(transform)
        if kind == "hash_join":
            return None if index == 0 else False
        if kind in ("map", "filter", "flat_map", "peek"):
            return None
        return False

    def chain_output_pairs(self, last: Transform, pairs_in: bool) -> bool:
        """What a chain ending in ``last`` should emit: what its only consumer needs, if any."""
        if len(last.downstream) == 1:
            consumer = last.downstream[0]
            index = next(i for i, source in enumerate(consumer.inputs) if source.transform is last)
            needed = self.input_needs_pairs(consumer, index)
            if needed is not None:
                return needed
        return pairs_in

    def converted_output(self, transform: Transform, pairs: bool) -> Vertex:
        """The vertex whose output is ``transform``'s in the representation ``pairs``."""
        vertex = self.output_vertex[transform]
        if self.emits_pairs[transform] == pairs:
            return vertex
        converter = self.converters.get(transform)
        if converter is None:
            chunk_fn = wrap_chunk if pairs else unwrap_chunk
            converter = self._vertex(f"{vertex.name}-{'wrap' if pairs else 'unwrap'}",
                                     lambda: TransformP(chunk_fn), vertex.local_parallelism)
            self._connect(vertex, converter, lambda e: e.isolated())
            self.converters[transform] = converter
        return converter

    # -- sources and timestamps -----------------------------------------------------------------
    def _throttled(self, policy: Any) -> Any:
        return replace(policy, frame_size_ms=self.frame_ms, frame_offset_ms=0)

    def _plan_stream_source(self, transform: Transform) -> None:
        source, name = transform.connector, self.names[transform]
        lp = self._effective_lp(transform)
        policy = transform.event_time_policy
        if policy is not None:
            policy = self._throttled(policy)
        if source.policy_supplier is not None:
            self.output_vertex[transform] = self._vertex(name, source.policy_supplier(policy), lp)
            return
        vertex = self._vertex(name, source.supplier, lp)
        if policy is not None:
            from jet.core.processors import insert_watermarks_p
            stamps = self._vertex(f"{name}-add-timestamps", insert_watermarks_p(policy), lp)
            self._connect(vertex, stamps, lambda e: e.isolated())
            vertex = stamps
        self.output_vertex[transform] = vertex

    def _plan_add_timestamps(self, transform: Transform) -> None:
        from jet.core.processors import insert_watermarks_p
        policy = self._throttled(transform.event_time_policy)
        vertex = self._vertex(self.names[transform], insert_watermarks_p(policy),
                              self._effective_lp(transform))
        self._connect_input(transform.inputs[0], vertex, pairs=False)
        self.output_vertex[transform] = vertex

    # -- windows --------------------------------------------------------------------------------
    def _plan_window_aggregate(self, transform: Transform) -> None:
        from jet.core import processors
        name, definition, operation = self.names[transform], transform.window, transform.operation
        key_fn, source = transform.key_fn, transform.inputs[0]
        keyed = key_fn is not None
        lp = self._effective_lp(transform)
        last_lp = lp if keyed else 1
        early_ms = definition.early_results_period_ms
        if keyed:
            by_key = key_of_pair(key_fn)
            across_members = lambda e: e.partitioned(by_key).distributed()  # noqa: E731
        else:
            across_members = lambda e: e.all_to_one(name).distributed()  # noqa: E731
        if isinstance(definition, SessionWindowDefinition):
            supplier = processors.aggregate_to_session_window_p(definition.timeout_ms, key_fn, operation,
                                                                early_ms)
            vertex = self._vertex(name, supplier, last_lp)
            self._connect_input(source, vertex, keyed=True, setup=across_members, pairs=True)
        elif operation.combine is None or early_ms > 0 or source.rebalance:
            supplier = processors.aggregate_to_sliding_window_p(key_fn, self._window_policy(definition),
                                                                operation, early_ms)
            vertex = self._vertex(name, supplier, last_lp)
            self._connect_input(source, vertex, keyed=True, setup=across_members, pairs=True)
        else:
            policy = self._window_policy(definition)
            prepare = self._vertex(f"{name}-prepare",
                                   processors.accumulate_by_frame_p(key_fn, policy, operation), lp)
            vertex = self._vertex(name, processors.combine_to_sliding_window_p(policy, operation, keyed),
                                  last_lp)
            if keyed:
                self._connect_input(source, prepare, keyed=True, pairs=True,
                                    setup=lambda e: e.partitioned(by_key, HASH_PARTITIONER))
                self._connect(prepare, vertex,
                              lambda e: e.partitioned(_key_of_frame_result).distributed())
            else:
                self._connect_input(source, prepare, setup=lambda e: e.isolated(), pairs=True)
                self._connect(prepare, vertex, across_members)
        self.output_vertex[transform] = vertex

    @staticmethod
    def _window_policy(definition: Any) -> Any:
        from jet.core.sliding_window_policy import sliding_win_policy, tumbling_win_policy
        if definition.is_tumbling:
            return tumbling_win_policy(definition.size_ms)
        return sliding_win_policy(definition.size_ms, definition.slide_ms)

    # -- stateful mapping -------------------------------------------------------------------------
    def _plan_stateful(self, transform: Transform) -> None:
        from jet.core.processors import transform_stateful_p
        name, key_fn = self.names[transform], transform.key_fn
        kind = transform.kind[:-len("_stateful")]
        fn = transform.fn
        if kind == "filter" and key_fn is not None:
            # Jet's keyed filterStateful takes (state, item); the processor passes the key too.
            fn = _without_key(fn)
        supplier = transform_stateful_p(kind, key_fn, transform.ttl_ms, transform.create_fn, fn,
                                        transform.on_evict_fn)
        if key_fn is not None:
            by_key = key_of_pair(key_fn)
            vertex = self._vertex(name, supplier, self._effective_lp(transform))
            setup = lambda e: e.partitioned(by_key).distributed()  # noqa: E731
        else:
            vertex = self._vertex(name, supplier, 1)
            setup = lambda e: e.all_to_one(name).distributed()  # noqa: E731
        self._connect_input(transform.inputs[0], vertex, keyed=True, setup=setup, pairs=True)
        self.output_vertex[transform] = vertex

    _plan_map_stateful = _plan_filter_stateful = _plan_flat_map_stateful = _plan_stateful

    # provided by Planner
    dag: Any
    _vertex: Callable[..., Vertex]
    _connect: Callable[..., Any]
    _connect_input: Callable[..., Any]
    _effective_lp: Callable[[Transform], int]
