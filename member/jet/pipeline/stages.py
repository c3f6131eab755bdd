"""The fluent stage API: each call adds a transform and returns the stage for its output.

Stages never import the pipeline: they add transforms through the ``TransformGraph`` protocol,
so ``pipeline.py`` depends on this module and not the other way round. Stream stages extend
these classes in ``stream_stages.py``. Mistakes that depend on what kind of stage an operation
is applied to (a window on a batch stage, an aggregation without a window on a stream) are
reported by ``Pipeline.validate`` at submission, naming the stage.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from jet.core.aggregate import AggregateOperation
from jet.core.functions import as_key_fn
from jet.core.processors.batches import BATCH_FORMATS
from jet.pipeline.enrichment_stages import KeyedServiceStageMethods, ServiceStageMethods, WindowDistinctMethods
from jet.pipeline.co_group import (HashJoinBuilder, JoinClause, WindowAggregateBuilder, aggregate_n, hash_join_n,
                                   interval_join, window_aggregate_n, window_join)
from jet.pipeline.errors import PipelineDefinitionError, require_callable, require_operation
from jet.pipeline.source_sink import Sink
from jet.pipeline.transforms import Input, Transform, TransformGraph
from jet.pipeline.window_definition import SessionWindowDefinition, WindowDefinition

__all__ = ["BatchStage", "GeneralStage", "PipelineDefinitionError", "SinkStage", "Stage",
           "StageWithKey", "StageWithKeyAndWindow", "StageWithWindow"]


class Stage:
    """Common to every stage: naming and parallelism."""

    def __init__(self, pipeline: TransformGraph, transform: Transform) -> None:
        self._pipeline = pipeline
        self._transform = transform

    @property
    def name(self) -> str:
        return self._transform.name

    def set_name(self, name: str) -> "Stage":
        """Name the stage (and its vertex)."""
        if not isinstance(name, str) or not name:
            raise PipelineDefinitionError(f"stage {self.name!r}: a name must be a non-empty str")
        self._transform.name = name
        return self

    def set_local_parallelism(self, local_parallelism: int) -> "Stage":
        """Processors of this stage per member (-1: the member default)."""
        if (not isinstance(local_parallelism, int) or isinstance(local_parallelism, bool)
                or (local_parallelism < 1 and local_parallelism != -1)):
            raise PipelineDefinitionError(
                f"stage {self.name!r}: local parallelism must be -1 or >= 1, got {local_parallelism!r}")
        self._transform.local_parallelism = local_parallelism
        return self


class GeneralStage(ServiceStageMethods, Stage):
    """A stage whose output other stages can read: what batch and stream stages share.

    Every method returns a stage of the same kind as this one (batch or stream)."""

    def __init__(self, pipeline: TransformGraph, transform: Transform,
                 rebalance: bool = False, rebalance_key: Callable[[Any], Any] | None = None) -> None:
        super().__init__(pipeline, transform)
        self._rebalance = rebalance
        self._rebalance_key = rebalance_key

    def _keyed(self, key_fn: Callable[[Any], Any]) -> "StageWithKey":
        return StageWithKey(self, key_fn)

    def _input(self) -> Input:
        return Input(self._transform, self._rebalance, self._rebalance_key)

    def _add(self, kind: str, inputs: list[Input], **fields: Any) -> Any:
        """A new transform reading ``inputs``, a stream (with timestamps) when this stage is."""
        fields.setdefault("stream", self._transform.stream)
        fields.setdefault("timestamped", self._transform.timestamped)
        transform = Transform(kind, inputs, pipeline=self._pipeline, **fields)
        self._pipeline._add(transform)
        return type(self)(self._pipeline, transform)

    def _own(self, other: Any, what: str) -> "GeneralStage":
        if not isinstance(other, GeneralStage):
            raise PipelineDefinitionError(f"stage {self.name!r}: {what} needs a stage, got {other!r}")
        if other._pipeline is not self._pipeline:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: {what} got stage {other.name!r} of another pipeline")
        if other._transform is self._transform:
            raise PipelineDefinitionError(f"stage {self.name!r}: {what} with itself")
        return other

    # -- stateless --------------------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any]) -> Any:
        """Emit ``fn(item)`` for each item."""
        require_callable(fn, "map", "the mapping function")
        return self._add("map", [self._input()], fn=fn)

    def filter(self, fn: Callable[[Any], Any]) -> Any:
        """Keep the items for which ``fn(item)`` is truthy."""
        require_callable(fn, "filter", "the predicate")
        return self._add("filter", [self._input()], fn=fn)

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Any:
        """Emit every item of the iterable ``fn(item)``."""
        require_callable(fn, "flat-map", "the function")
        return self._add("flat_map", [self._input()], fn=fn)

    def map_batches(self, fn: Callable[[Any], Any], *, format: str = "arrow", schema: Any = None,
                    as_dicts: bool = False) -> Any:
        """Apply ``fn`` to whole batches of items, like PySpark's ``mapInArrow``/``mapInPandas``.

        ``fn`` takes a ``pyarrow.RecordBatch`` (``format="arrow"``) or a pandas ``DataFrame``
        (``format="pandas"``) and returns a RecordBatch, a ``pyarrow.Table``, a DataFrame, or
        None for nothing. Vectorised code then runs without a Python call per row.

        From a Spark source the batches are Spark's own when this stage is the source's only
        consumer (and its input is not rebalanced by key); batches waiting together are joined
        up to 65,536 rows before ``fn`` sees them. Rows from any other stage are
        gathered into one batch per chunk: dict rows give a column per key, tuple rows columns
        ``_1`` .. ``_n`` unless ``schema`` (a ``pyarrow.Schema``) names and types them; without
        a schema pyarrow infers each batch's types on its own.

        What the next stage sees: batches stay batches into another ``map_batches`` and into a
        Spark sink; any other stage sees rows, as tuples in column order (as a Spark source
        emits them), or dicts keyed by column name with ``as_dicts=True``. The rows are made in
        this stage's vertex, with no extra vertex or edge.

        Batches carry no per-row event time, so a stream with timestamps cannot use this stage:
        use it before ``with_timestamps``/``add_timestamps`` (on a stream without timestamps),
        or a row stage. Needs pyarrow (and pandas for ``format="pandas"``).
        """
        require_callable(fn, "map-batches", "the batch function")
        if format not in BATCH_FORMATS:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: map_batches format must be "
                f"{' or '.join(map(repr, BATCH_FORMATS))}, got {format!r}")
        if not isinstance(as_dicts, bool):
            raise PipelineDefinitionError(
                f"stage {self.name!r}: map_batches as_dicts must be a bool, got {as_dicts!r}")
        _require_batch_libraries(format, self.name)
        if schema is not None:
            import pyarrow as pa
            if not isinstance(schema, pa.Schema):
                raise PipelineDefinitionError(
                    f"stage {self.name!r}: map_batches schema must be a pyarrow.Schema or None, "
                    f"got {type(schema).__name__} {schema!r}")
        if self._transform.timestamped:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: map_batches cannot follow a stream with timestamps: a batch"
                " carries no per-row event time. Apply map_batches before the timestamps are added"
                " (without_timestamps() on the source, then add_timestamps after it) or use a row"
                " stage (map, flat_map)")
        return self._add("map_batches", [self._input()], fn=fn, batch_format=format, schema=schema,
                         as_dicts=as_dicts)

    def peek(self, format_fn: Callable[[Any], str] = str) -> Any:
        """Log every item passing through (at INFO), unchanged."""
        require_callable(format_fn, "peek", "the format function")
        return self._add("peek", [self._input()], fn=format_fn)

    def rebalance(self, key_fn: Callable[[Any], Any] | None = None) -> Any:
        """Spread the next stage's input over the whole cluster: round-robin, or by key."""
        if key_fn is not None:
            require_callable(key_fn, self.name, "the rebalance key function")
        return type(self)(self._pipeline, self._transform, True, key_fn)

    # -- aggregation and state ------------------------------------------------------------------
    def grouping_key(self, key_fn: Callable[[Any], Any]) -> "StageWithKey":
        """Group the items by ``key_fn(item)`` for a keyed aggregation, window or state."""
        require_callable(key_fn, self.name, "the grouping key function")
        return self._keyed(as_key_fn(key_fn))

    def aggregate(self, operation: AggregateOperation) -> Any:
        """Aggregate all items into one result (a batch stage; a stream needs a window first)."""
        require_operation(operation, "aggregate")
        return self._add("aggregate", [self._input()], operation=operation)

    def window(self, definition: WindowDefinition) -> "StageWithWindow":
        """Group a stream's events into windows (see ``WindowDefinition``), then ``aggregate``."""
        _require_window(definition, self.name)
        return StageWithWindow(self, None, definition)

    def map_stateful(self, create_fn: Callable[[], Any],
                     map_fn: Callable[[Any, Any], Any]) -> Any:
        """Emit ``map_fn(state, item)`` (unless None) with one state for the whole stage, made by
        ``create_fn()``; runs on one processor in the cluster."""
        return _stateful(self, "map", None, 0, create_fn, map_fn, None)

    def filter_stateful(self, create_fn: Callable[[], Any],
                        filter_fn: Callable[[Any, Any], Any]) -> Any:
        """Keep the items for which ``filter_fn(state, item)`` is truthy (one global state)."""
        return _stateful(self, "filter", None, 0, create_fn, filter_fn, None)

    def flat_map_stateful(self, create_fn: Callable[[], Any],
                          flat_map_fn: Callable[[Any, Any], Iterable[Any]]) -> Any:
        """Emit every item of ``flat_map_fn(state, item)`` (one global state)."""
        return _stateful(self, "flat_map", None, 0, create_fn, flat_map_fn, None)

    # -- joining ----------------------------------------------------------------------------
    def hash_join(self, other: "GeneralStage", key_fn: Callable[[Any], Any],
                  other_key_fn: Callable[[Any], Any],
                  mapper: Callable[[Any, Any], Any], how: str = "left") -> Any:
        """Enrich each item with the items of ``other`` (the lookup side, a batch stage) whose
        ``other_key_fn`` equals the item's ``key_fn``: emits ``mapper(item, match)`` per match,
        or ``mapper(item, None)`` when there is none (a left outer join); ``how="inner"``
        drops an item without a match."""
        if how != "left":
            return hash_join_n(self, [(other, JoinClause(key_fn, other_key_fn))], mapper, how)
        other = self._own(other, "hash_join")
        for argument, fn in (("key_fn", key_fn), ("other_key_fn", other_key_fn), ("mapper", mapper)):
            require_callable(fn, "hash-join", argument)
        return self._add("hash_join", [self._input(), other._input()], key_fn=as_key_fn(key_fn),
                         other_key_fn=as_key_fn(other_key_fn), fn=mapper)

    def inner_hash_join(self, other: "GeneralStage", key_fn: Callable[[Any], Any],
                        other_key_fn: Callable[[Any], Any], mapper: Callable[[Any, Any], Any]) -> Any:
        """``hash_join(..., how="inner")``: ``mapper(item, match)`` per match only."""
        return self.hash_join(other, key_fn, other_key_fn, mapper, how="inner")

    def hash_join2(self, other1: "GeneralStage", clause1: JoinClause, other2: "GeneralStage",
                   clause2: JoinClause, mapper: Callable[[Any, Any, Any], Any], how: str = "left") -> Any:
        """Join each item with two lookup sides (batch stages) at once: ``mapper(item, match1,
        match2)`` per combination of matches (None for a side without one; ``how="inner"``
        drops the item instead). A clause is ``JoinClause.on_keys(key_fn, other_key_fn)``."""
        return hash_join_n(self, [(other1, clause1), (other2, clause2)], mapper, how)

    def hash_join_builder(self) -> HashJoinBuilder:
        """A hash join with any number of lookup sides: ``tag = builder.add(stage, clause)``,
        then ``builder.build(mapper)`` with ``mapper(item, matches)``, ``matches[tag]``."""
        return HashJoinBuilder(self)

    def aggregate2(self, *args: Any) -> Any:
        """Aggregate this batch stage and another in one pass: ``aggregate2(op0, other, op1)``
        or ``aggregate2(other, AggregateOperations.aggregate_operation2(op0, op1))``; the
        result is ``(result0, result1)``."""
        return aggregate_n(self, 2, args)

    def aggregate3(self, *args: Any) -> Any:
        """Three batch stages in one pass: ``aggregate3(op0, s1, op1, s2, op2)`` or
        ``aggregate3(s1, s2, aggregate_operation3(op0, op1, op2))``."""
        return aggregate_n(self, 3, args)

    def merge(self, other: "GeneralStage") -> Any:
        """The items of both stages (two batch stages, or two streams)."""
        other = self._own(other, "merge")
        both_timestamped = self._transform.timestamped and other._transform.timestamped
        return self._add("merge", [self._input(), other._input()], timestamped=both_timestamped)

    # -- sink ---------------------------------------------------------------------------------
    def write_to(self, sink: Sink) -> "SinkStage":
        """Send every item to ``sink`` (see ``jet.Sinks``)."""
        if not isinstance(sink, Sink):
            raise PipelineDefinitionError(
                f"stage {self.name!r}: write_to needs a sink from jet.Sinks, got {sink!r}")
        transform = Transform("sink", [self._input()], connector=sink,
                              local_parallelism=sink.local_parallelism, pipeline=self._pipeline)
        self._pipeline._add(transform)
        return SinkStage(self._pipeline, transform)


class BatchStage(GeneralStage):
    """A stage of a finite input."""


class StageWithKey(KeyedServiceStageMethods):
    """A stage grouped by a key: a keyed aggregation, window or stateful mapping follows."""

    def __init__(self, stage: GeneralStage, key_fn: Callable[[Any], Any]) -> None:
        self._stage = stage
        self._key_fn = key_fn

    def aggregate(self, operation: AggregateOperation) -> Any:
        """Aggregate the items of each key; emits (key, result) pairs (a batch stage)."""
        require_operation(operation, "group-and-aggregate")
        return self._stage._add("group_aggregate", [self._stage._input()], key_fn=self._key_fn,
                                operation=operation)

    def aggregate2(self, *args: Any) -> Any:
        """Co-group two keyed batch stages: ``aggregate2(op0, other.grouping_key(k), op1)`` or
        ``aggregate2(other.grouping_key(k), aggregate_operation2(op0, op1))``; emits
        ``(key, (result0, result1))`` per key found in either."""
        return aggregate_n(self, 2, args)

    def aggregate3(self, *args: Any) -> Any:
        """Co-group three keyed batch stages (see :meth:`aggregate2`)."""
        return aggregate_n(self, 3, args)

    def interval_join(self, other: "StageWithKey", lower_ms: int, upper_ms: int,
                      mapper: Callable[[Any, Any], Any], *, broadcast: str | None = None) -> Any:
        """Join two keyed streams in event time: ``mapper(left, right)`` for every ``right``
        of ``other`` with the same key and ``right.ts`` in ``[left.ts - lower_ms, left.ts +
        upper_ms]``, emitted at the later of the two timestamps. Buffers are evicted by the
        watermark; items behind it are late (dropped and counted).

        ``broadcast="left"`` (this stage) or ``"right"`` (``other``): that side, which must be
        small enough for every processor to hold, goes to every member, and the other side
        stays on the member that produced it, so it never crosses the network (Spark's
        broadcast hint). Default: both sides partitioned by key across members."""
        return interval_join(self, other, lower_ms, upper_ms, mapper, broadcast)

    def window(self, definition: WindowDefinition) -> "StageWithKeyAndWindow":
        """Group each key's events into windows, then ``aggregate``: emits KeyedWindowResults."""
        _require_window(definition, self._stage.name)
        return StageWithKeyAndWindow(self._stage, self._key_fn, definition)

    def map_stateful(self, ttl_ms: int, create_fn: Callable[[], Any],
                     map_fn: Callable[[Any, Any, Any], Any] | None = None,
                     on_evict_fn: Callable[[Any, Any, int], Any] | None = None) -> Any:
        """Emit ``map_fn(state, key, item)`` (unless None) with one state per key from
        ``create_fn()``. With ``ttl_ms > 0`` (event time; needs timestamps) a key whose latest
        event is more than ``ttl_ms`` behind the watermark is evicted, emitting
        ``on_evict_fn(state, key, watermark)`` unless None; ``map_stateful(create_fn, map_fn)``
        keeps state forever, as Jet's overload does."""
        ttl_ms, create_fn, map_fn = _without_ttl_overload(ttl_ms, create_fn, map_fn)
        return _stateful(self._stage, "map", self._key_fn, ttl_ms, create_fn, map_fn, on_evict_fn)

    def filter_stateful(self, ttl_ms: int, create_fn: Callable[[], Any],
                        filter_fn: Callable[[Any, Any], Any] | None = None) -> Any:
        """Keep the items for which ``filter_fn(state, item)`` is truthy, one state per key
        (``ttl_ms`` as in :meth:`map_stateful`)."""
        ttl_ms, create_fn, filter_fn = _without_ttl_overload(ttl_ms, create_fn, filter_fn)
        return _stateful(self._stage, "filter", self._key_fn, ttl_ms, create_fn, filter_fn, None)

    def flat_map_stateful(self, ttl_ms: int, create_fn: Callable[[], Any],
                          flat_map_fn: Callable[[Any, Any, Any], Iterable[Any]] | None = None,
                          on_evict_fn: Callable[[Any, Any, int], Iterable[Any]] | None = None) -> Any:
        """Emit every item of ``flat_map_fn(state, key, item)``, one state per key; an evicted
        key emits every item of ``on_evict_fn(state, key, watermark)``."""
        ttl_ms, create_fn, flat_map_fn = _without_ttl_overload(ttl_ms, create_fn, flat_map_fn)
        return _stateful(self._stage, "flat_map", self._key_fn, ttl_ms, create_fn, flat_map_fn,
                         on_evict_fn)


class StageWithWindow(WindowDistinctMethods):
    """A stage with a window definition: ``aggregate`` gives the windows' results."""

    def __init__(self, stage: GeneralStage, key_fn: Callable[[Any], Any] | None,
                 definition: WindowDefinition) -> None:
        self._stage = stage
        self._key_fn = key_fn
        self._definition = definition

    @property
    def window_definition(self) -> WindowDefinition:
        return self._definition

    def aggregate(self, operation: AggregateOperation) -> Any:
        """Aggregate each window: emits ``WindowResult(start, end, result, is_early)``, or
        ``KeyedWindowResult(start, end, key, result, is_early)`` per key of a keyed stage."""
        name = "session-window" if isinstance(self._definition, SessionWindowDefinition) \
            else "sliding-window"
        require_operation(operation, name)
        return self._stage._add("window_aggregate", [self._stage._input()], name=name,
                                key_fn=self._key_fn, operation=operation, window=self._definition,
                                timestamped=True)

    def aggregate2(self, *args: Any) -> Any:
        """Co-group this stream with another in the same windows (keyed when this stage is):
        ``aggregate2(op0, other, op1)`` or ``aggregate2(other, aggregate_operation2(op0, op1))``;
        each window's result is ``(result0, result1)``."""
        return window_aggregate_n(self, 2, args)

    def aggregate3(self, *args: Any) -> Any:
        """Three streams in the same windows: ``aggregate3(op0, s1, op1, s2, op2)`` or
        ``aggregate3(s1, s2, aggregate_operation3(op0, op1, op2))``."""
        return window_aggregate_n(self, 3, args)

    def aggregate_builder(self, operation0: AggregateOperation) -> WindowAggregateBuilder:
        """Any number of streams: ``tag = builder.add(other, op)``, then ``builder.build()``."""
        return WindowAggregateBuilder(self, operation0)

    def join(self, other: Any, mapper: Callable[[Any, Any], Any], how: str = "inner") -> Any:
        """Join two keyed streams per key and window: ``mapper(left, right)`` for every pair of
        a window (emitted when it closes, at its last instant); ``how="left"`` also gives
        ``mapper(left, None)`` for a left item whose window has no right item of its key."""
        return window_join(self, other, mapper, how)


class StageWithKeyAndWindow(StageWithWindow):
    """A keyed stage with a window definition."""


class SinkStage(Stage):
    """The end of a branch."""


def _require_window(definition: Any, stage: str) -> None:
    if not isinstance(definition, WindowDefinition):
        raise PipelineDefinitionError(
            f"stage {stage!r}: window() needs a WindowDefinition (tumbling, sliding or session),"
            f" got {type(definition).__name__} {definition!r}")


def _without_ttl_overload(ttl_ms: Any, create_fn: Any, fn: Any) -> tuple[Any, Any, Any]:
    """Jet's ``mapStateful(createFn, mapFn)`` overload: no TTL."""
    if fn is None and callable(ttl_ms):
        return 0, ttl_ms, create_fn
    return ttl_ms, create_fn, fn


def _stateful(stage: GeneralStage, kind: str, key_fn: Callable[[Any], Any] | None, ttl_ms: Any,
              create_fn: Any, fn: Any, on_evict_fn: Any) -> Any:
    name = f"{kind.replace('_', '-')}-stateful-{'global' if key_fn is None else 'keyed'}"
    require_callable(create_fn, name, "create_fn")
    require_callable(fn, name, f"the {kind.replace('_', '-')} function")
    if on_evict_fn is not None:
        require_callable(on_evict_fn, name, "on_evict_fn")
    return stage._add(f"{kind}_stateful", [stage._input()], name=name, key_fn=key_fn,
                      ttl_ms=ttl_ms, create_fn=create_fn, fn=fn, on_evict_fn=on_evict_fn)


def _require_batch_libraries(format: str, stage: str) -> None:
    for library in ("pyarrow", "pandas") if format == "pandas" else ("pyarrow",):
        try:
            __import__(library)
        except ImportError:
            raise PipelineDefinitionError(
                f"stage {stage!r}: map_batches(format={format!r}) needs {library}; install it"
                " (pip install 'jet-on-k8s[spark]')") from None
