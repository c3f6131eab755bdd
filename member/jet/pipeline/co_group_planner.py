"""How the planner shapes stages of several inputs, as Jet plans them (:class:`CoGroupPlanner`,
used by ``Planner``). Input ``i`` always reaches its vertex on ordinal ``i``.

- Windowed co-grouping (``window_co_aggregate``): tumbling and sliding windows are
  ``<name>-prepare`` (``co_accumulate_by_frame_p``: every input on a local edge partitioned by
  its own key, folded into one accumulation per frame and key) then ``<name>``
  (``co_combine_to_sliding_window_p``, partitioned by key across members; one processor when not
  keyed) when the operation can combine, its first stage would reduce what crosses (not
  ``keeps_every_item``, as a window join's lists) and neither early results nor a rebalance say
  otherwise; else one stage. Session windows are one stage. A window join is such a stage
  followed by a flat-map of each window's joined list.
- Interval join: one vertex, both inputs partitioned by their key across members.
- Batch co-grouping (``co_aggregate``): ``<name>-prepare-<i>`` per input (the single-input
  accumulation with input ``i``'s part of the operation) into one ``<name>`` combining whole
  accumulators; without a combine function the inputs are tagged with their ordinal and
  aggregated in one stage.
- A hash join with several lookup sides: one ``<name>-collector-<i>`` per side broadcasting its
  table to every ``<name>-joiner`` on a higher-priority edge.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.functions import entry_key
from jet.core.partitioner import HASH_PARTITIONER
from jet.core.processors import (TransformP, accumulate_by_key_p, accumulate_p, aggregate_by_key_p, aggregate_p,
                                 combine_by_key_p, combine_p)
from jet.core.processors.co_group import (co_accumulate_by_frame_p, co_aggregate_to_session_window_p,
                                          co_aggregate_to_sliding_window_p, co_combine_to_sliding_window_p)
from jet.core.processors.interval_join import interval_join_p
from jet.core.sliding_window_policy import sliding_win_policy
from jet.core.window_results import partial_key
from jet.pipeline.dag_builder import DagBuilder
from jet.pipeline.hash_join_n import hash_join_n_p
from jet.pipeline.item_forms import key_of_pair
from jet.pipeline.join_processors import HashJoinCollectP
from jet.pipeline.transforms import Transform
from jet.pipeline.window_definition import SessionWindowDefinition


def _tagger(ordinal: int) -> Callable[[], TransformP]:
    return lambda: TransformP(lambda chunk: [(ordinal, item) for item in chunk])


def _tagged_key(key_fns: tuple) -> Callable[[tuple], Any]:
    return lambda tagged: key_fns[tagged[0]](tagged[1])


class CoGroupPlanner:
    """Plans the stages of several inputs into the DAG a :class:`DagBuilder` builds."""

    def __init__(self, builder: DagBuilder) -> None:
        self._builder = builder

    def plan_window_co_aggregate(self, transform: Transform) -> None:
        builder = self._builder
        name, definition, operation = builder.names[transform], transform.window, transform.operation
        key_fns = transform.co_group.key_fns
        keyed = key_fns is not None
        lp = builder.effective_lp(transform)
        early_ms = definition.early_results_period_ms
        if keyed:
            def across_members(ordinal: int) -> Callable:
                by_key = key_of_pair(key_fns[ordinal])
                return lambda e: e.partitioned(by_key).distributed()
        else:
            across_members = lambda _ordinal: lambda e: e.all_to_one(name).distributed()  # noqa: E731
        last_lp = lp if keyed else 1
        if isinstance(definition, SessionWindowDefinition):
            supplier = co_aggregate_to_session_window_p(definition.timeout_ms, key_fns, operation, early_ms)
            vertex = builder.vertex(name, supplier, last_lp)
            self._connect_inputs(transform, vertex, across_members)
        elif (operation.combine is None or operation.keeps_every_item or early_ms > 0
              or any(source.rebalance for source in transform.inputs)):
            policy = sliding_win_policy(definition.size_ms, definition.slide_ms)
            vertex = builder.vertex(name, co_aggregate_to_sliding_window_p(key_fns, policy, operation, early_ms),
                                    last_lp)
            self._connect_inputs(transform, vertex, across_members)
        else:
            policy = sliding_win_policy(definition.size_ms, definition.slide_ms)
            prepare = builder.vertex(f"{name}-prepare", co_accumulate_by_frame_p(key_fns, policy, operation), lp)
            vertex = builder.vertex(name, co_combine_to_sliding_window_p(policy, operation, keyed), last_lp)
            if keyed:
                def locally(ordinal: int) -> Callable:
                    by_key = key_of_pair(key_fns[ordinal])
                    return lambda e: e.partitioned(by_key, HASH_PARTITIONER)
                self._connect_inputs(transform, prepare, locally)
                builder.connect(prepare, vertex, lambda e: e.partitioned(partial_key).distributed())
            else:
                self._connect_inputs(transform, prepare, lambda _ordinal: lambda e: e)
                builder.connect(prepare, vertex, across_members(0))
        builder.output_vertex[transform] = vertex

    def _connect_inputs(self, transform: Transform, vertex: Any, setup_of: Callable[[int], Callable]) -> None:
        for ordinal, source in enumerate(transform.inputs):
            self._builder.connect_input(source, vertex, keyed=True, setup=setup_of(ordinal), pairs=True)

    def plan_interval_join(self, transform: Transform) -> None:
        builder, spec = self._builder, transform.co_group
        left_key, right_key = spec.key_fns
        supplier = interval_join_p(left_key, right_key, spec.interval.lower_ms, spec.interval.upper_ms,
                                   transform.fn, spec.broadcast)
        vertex = builder.vertex(builder.names[transform], supplier, builder.effective_lp(transform))

        def routing(ordinal: int) -> Callable:
            if ordinal == spec.broadcast:
                return lambda e: e.broadcast().distributed()
            by_key = key_of_pair(spec.key_fns[ordinal])
            if spec.broadcast is not None:
                return lambda e: e.partitioned(by_key)  # stays on its member
            return lambda e: e.partitioned(by_key).distributed()

        self._connect_inputs(transform, vertex, routing)
        builder.output_vertex[transform] = vertex

    def plan_co_aggregate(self, transform: Transform) -> None:
        builder = self._builder
        name, operation, key_fns = builder.names[transform], transform.operation, transform.co_group.key_fns
        keyed = key_fns is not None
        lp = builder.effective_lp(transform)
        if operation.combine is None:
            vertex = self._tagged_single_stage(transform, name, lp)
        else:
            if keyed:
                vertex = builder.vertex(name, combine_by_key_p(operation), lp)
            else:
                vertex = builder.vertex(name, combine_p(operation), 1)
            for ordinal, source in enumerate(transform.inputs):
                view = operation.for_input(ordinal)
                if keyed:
                    key_fn = key_fns[ordinal]
                    prepare = builder.vertex(f"{name}-prepare-{ordinal}", accumulate_by_key_p(key_fn, view), lp)
                    builder.connect_input(source, prepare, keyed=True, pairs=False,
                                          setup=lambda e, k=key_fn: e.partitioned(k, HASH_PARTITIONER))
                    builder.connect(prepare, vertex, lambda e: e.partitioned(entry_key).distributed())
                else:
                    prepare = builder.vertex(f"{name}-prepare-{ordinal}", accumulate_p(view), lp)
                    builder.connect_input(source, prepare, pairs=False)
                    builder.connect(prepare, vertex, lambda e: e.all_to_one(name).distributed())
        builder.output_vertex[transform] = vertex

    def _tagged_single_stage(self, transform: Transform, name: str, lp: int) -> Any:
        """Each input's items as ``(ordinal, item)`` into one aggregation (no combine function)."""
        builder, operation, key_fns = self._builder, transform.operation, transform.co_group.key_fns
        if key_fns is not None:
            key_fn = _tagged_key(key_fns)
            vertex = builder.vertex(name, aggregate_by_key_p(key_fn, operation), lp)
            route = lambda e: e.partitioned(key_fn).distributed()  # noqa: E731
        else:
            vertex = builder.vertex(name, aggregate_p(operation), 1)
            route = lambda e: e.all_to_one(name).distributed()  # noqa: E731
        for ordinal, source in enumerate(transform.inputs):
            tagger = builder.vertex(f"{name}-tag-{ordinal}", _tagger(ordinal),
                                    builder.effective_lp(source.transform))
            builder.connect_input(source, tagger, pairs=False)
            builder.connect(tagger, vertex, route)
        return vertex

    def plan_hash_join_n(self, transform: Transform) -> None:
        builder, spec = self._builder, transform.co_group
        name = builder.names[transform]
        primary = transform.inputs[0]
        timestamped = builder.emits_pairs[primary.transform]
        joiner = builder.vertex(f"{name}-joiner",
                                hash_join_n_p(spec.key_fns, transform.fn, spec.how == "inner", timestamped),
                                builder.effective_lp(transform))
        builder.connect_input(primary, joiner)
        for ordinal, (lookup, other_key_fn) in enumerate(zip(transform.inputs[1:], spec.other_key_fns), 1):
            collector = builder.vertex(f"{name}-collector-{ordinal}",
                                       lambda k=other_key_fn: HashJoinCollectP(k), 1)
            builder.connect_input(lookup, collector, pairs=False, setup=lambda e: e.broadcast().distributed())
            builder.connect(collector, joiner, lambda e: e.broadcast().priority(-1))
        builder.output_vertex[transform] = joiner
