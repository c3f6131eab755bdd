"""How the planner shapes streams, as Jet 4.x does (:class:`StreamPlanner`, used by ``Planner``).

- A stream source with a ``policy_supplier`` gets the event-time policy and emits timestamped
  pairs and watermarks itself; any other gets ``<name>-add-timestamps``
  (``insert_watermarks_p``, same parallelism, isolated edge).
- Watermarks are throttled to frames: the frame size is the gcd of what the windows and TTLs
  downstream prefer (Jet's preferred watermark strides), 1000 ms when nothing does, and
  gcd(frame, 1000) above 1000 ms; every policy of the pipeline gets it.
- Tumbling and sliding windows are ``<name>-prepare`` (``accumulate_by_frame_p``, on a local
  edge) then ``<name>`` (``combine_to_sliding_window_p``, across members) when the aggregation
  can combine, its first stage would reduce what crosses (not ``keeps_every_item``) and neither
  early results nor a rebalance say otherwise; else one stage
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

from functools import reduce
from math import gcd
from typing import Any, Callable, Sequence

from jet.core.chain_contract import ChainContract
from jet.core.partitioner import HASH_PARTITIONER
from jet.core.processors import TransformP, compile_chain
from jet.core.processors.transform import compile_timestamped_chain
from jet.core.window_results import partial_key
from jet.pipeline.dag_builder import DagBuilder
from jet.pipeline.item_forms import key_of_pair, unwrap_chunk, wrap_chunk
from jet.pipeline.transforms import STATEFUL_KINDS, Transform
from jet.pipeline.window_definition import SessionWindowDefinition

#: The throttling frame when no stage asks for one (Jet keeps watermarks for latency metrics).
DEFAULT_WATERMARK_FRAME_MS = 1000


def watermark_frame_ms(transforms: Sequence[Transform]) -> int:
    """Jet's watermark throttling frame for a pipeline: gcd of the preferred strides."""
    strides = [t.window.preferred_watermark_stride_ms for t in transforms
               if t.kind in ("window_aggregate", "window_co_aggregate")]
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


class StreamPlanner:
    """Plans the stream stages (sources with event time, timestamps, windows, stateful mapping)
    into the DAG a :class:`~jet.pipeline.dag_builder.DagBuilder` builds."""

    def __init__(self, builder: DagBuilder) -> None:
        self._builder = builder

    # -- sources and timestamps -----------------------------------------------------------------
    def plan_stream_source(self, transform: Transform) -> None:
        source, name = transform.connector, self._builder.names[transform]
        lp = self._builder.effective_lp(transform)
        policy = transform.event_time_policy
        if policy is not None:
            policy = self._builder.throttled(policy)
        if source.policy_supplier is not None:
            self._builder.output_vertex[transform] = self._builder.vertex(name, source.policy_supplier(policy), lp)
            return
        vertex = self._builder.vertex(name, source.supplier, lp)
        if policy is not None:
            from jet.core.processors import insert_watermarks_p
            stamps = self._builder.vertex(f"{name}-add-timestamps", insert_watermarks_p(policy), lp)
            self._builder.connect(vertex, stamps, lambda e: e.isolated())
            vertex = stamps
        self._builder.output_vertex[transform] = vertex

    def plan_add_timestamps(self, transform: Transform) -> None:
        from jet.core.processors import insert_watermarks_p
        policy = self._builder.throttled(transform.event_time_policy)
        vertex = self._builder.vertex(self._builder.names[transform], insert_watermarks_p(policy),
                              self._builder.effective_lp(transform))
        self._builder.connect_input(transform.inputs[0], vertex, pairs=False)
        self._builder.output_vertex[transform] = vertex

    # -- windows --------------------------------------------------------------------------------
    def plan_window_aggregate(self, transform: Transform) -> None:
        from jet.core import processors
        name, definition, operation = self._builder.names[transform], transform.window, transform.operation
        key_fn, source = transform.key_fn, transform.inputs[0]
        keyed = key_fn is not None
        lp = self._builder.effective_lp(transform)
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
            vertex = self._builder.vertex(name, supplier, last_lp)
            self._builder.connect_input(source, vertex, keyed=True, setup=across_members, pairs=True)
        elif operation.combine is None or operation.keeps_every_item or early_ms > 0 or source.rebalance:
            supplier = processors.aggregate_to_sliding_window_p(key_fn, self._window_policy(definition),
                                                                operation, early_ms)
            vertex = self._builder.vertex(name, supplier, last_lp)
            self._builder.connect_input(source, vertex, keyed=True, setup=across_members, pairs=True)
        else:
            policy = self._window_policy(definition)
            prepare = self._builder.vertex(f"{name}-prepare",
                                   processors.accumulate_by_frame_p(key_fn, policy, operation), lp)
            vertex = self._builder.vertex(name, processors.combine_to_sliding_window_p(policy, operation, keyed),
                                  last_lp)
            if keyed:
                self._builder.connect_input(source, prepare, keyed=True, pairs=True,
                                    setup=lambda e: e.partitioned(by_key, HASH_PARTITIONER))
                self._builder.connect(prepare, vertex,
                              lambda e: e.partitioned(partial_key).distributed())
            else:
                self._builder.connect_input(source, prepare, setup=lambda e: e.isolated(), pairs=True)
                self._builder.connect(prepare, vertex, across_members)
        self._builder.output_vertex[transform] = vertex

    @staticmethod
    def _window_policy(definition: Any) -> Any:
        from jet.core.sliding_window_policy import sliding_win_policy, tumbling_win_policy
        if definition.is_tumbling:
            return tumbling_win_policy(definition.size_ms)
        return sliding_win_policy(definition.size_ms, definition.slide_ms)

    # -- stateful mapping -------------------------------------------------------------------------
    def plan_stateful(self, transform: Transform) -> None:
        from jet.core.processors import transform_stateful_p
        name, key_fn = self._builder.names[transform], transform.key_fn
        kind = transform.kind[:-len("_stateful")]
        fn = transform.fn
        if kind == "filter" and key_fn is not None:
            # Jet's keyed filterStateful takes (state, item); the processor passes the key too.
            fn = _without_key(fn)
        supplier = transform_stateful_p(kind, key_fn, transform.ttl_ms, transform.create_fn, fn,
                                        transform.on_evict_fn)
        if key_fn is not None:
            by_key = key_of_pair(key_fn)
            vertex = self._builder.vertex(name, supplier, self._builder.effective_lp(transform))
            setup = lambda e: e.partitioned(by_key).distributed()  # noqa: E731
        else:
            vertex = self._builder.vertex(name, supplier, 1)
            setup = lambda e: e.all_to_one(name).distributed()  # noqa: E731
        self._builder.connect_input(transform.inputs[0], vertex, keyed=True, setup=setup, pairs=True)
        self._builder.output_vertex[transform] = vertex
