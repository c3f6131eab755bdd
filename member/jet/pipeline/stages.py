"""The fluent stage API: each call adds a transform and returns the stage for its output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from jet.connectors.base import Sink
from jet.core.aggregate import AggregateOperation
from jet.core.functions import as_key_fn
from jet.pipeline.transforms import Input, Transform

if TYPE_CHECKING:
    from jet.pipeline.pipeline import Pipeline


class PipelineDefinitionError(ValueError):
    """The pipeline is malformed; the message names the stage at fault."""


def _require_callable(fn: Any, stage: str, argument: str) -> None:
    if not callable(fn):
        raise PipelineDefinitionError(
            f"stage {stage!r}: {argument} must be callable, got {type(fn).__name__} {fn!r}")


class Stage:
    """Common to every stage: naming and parallelism."""

    def __init__(self, pipeline: "Pipeline", transform: Transform) -> None:
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


class BatchStage(Stage):
    """A stage whose output other stages can read."""

    def __init__(self, pipeline: "Pipeline", transform: Transform,
                 rebalance: bool = False, rebalance_key: Callable[[Any], Any] | None = None) -> None:
        super().__init__(pipeline, transform)
        self._rebalance = rebalance
        self._rebalance_key = rebalance_key

    def _input(self) -> Input:
        return Input(self._transform, self._rebalance, self._rebalance_key)

    def _add(self, kind: str, inputs: list[Input], **fields: Any) -> "BatchStage":
        transform = Transform(kind, inputs, pipeline=self._pipeline, **fields)
        self._pipeline._add(transform)
        return BatchStage(self._pipeline, transform)

    def _own(self, other: Any, what: str) -> "BatchStage":
        if not isinstance(other, BatchStage):
            raise PipelineDefinitionError(f"stage {self.name!r}: {what} needs a stage, got {other!r}")
        if other._pipeline is not self._pipeline:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: {what} got stage {other.name!r} of another pipeline")
        if other._transform is self._transform:
            raise PipelineDefinitionError(f"stage {self.name!r}: {what} with itself")
        return other

    # -- stateless --------------------------------------------------------------------------
    def map(self, fn: Callable[[Any], Any]) -> "BatchStage":
        """Emit ``fn(item)`` for each item."""
        _require_callable(fn, "map", "the mapping function")
        return self._add("map", [self._input()], fn=fn)

    def filter(self, fn: Callable[[Any], Any]) -> "BatchStage":
        """Keep the items for which ``fn(item)`` is truthy."""
        _require_callable(fn, "filter", "the predicate")
        return self._add("filter", [self._input()], fn=fn)

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> "BatchStage":
        """Emit every item of the iterable ``fn(item)``."""
        _require_callable(fn, "flat-map", "the function")
        return self._add("flat_map", [self._input()], fn=fn)

    def peek(self, format_fn: Callable[[Any], str] = str) -> "BatchStage":
        """Log every item passing through (at INFO), unchanged."""
        _require_callable(format_fn, "peek", "the format function")
        return self._add("peek", [self._input()], fn=format_fn)

    def rebalance(self, key_fn: Callable[[Any], Any] | None = None) -> "BatchStage":
        """Spread the next stage's input over the whole cluster: round-robin, or by key."""
        if key_fn is not None:
            _require_callable(key_fn, self.name, "the rebalance key function")
        return BatchStage(self._pipeline, self._transform, True, key_fn)

    # -- aggregation ------------------------------------------------------------------------
    def grouping_key(self, key_fn: Callable[[Any], Any]) -> "StageWithKey":
        """Group the items by ``key_fn(item)`` for a keyed aggregation."""
        _require_callable(key_fn, self.name, "the grouping key function")
        return StageWithKey(self, as_key_fn(key_fn))

    def aggregate(self, operation: AggregateOperation) -> "BatchStage":
        """Aggregate all items into one result."""
        _check_operation(operation, "aggregate")
        return self._add("aggregate", [self._input()], operation=operation)

    # -- joining ----------------------------------------------------------------------------
    def hash_join(self, other: "BatchStage", key_fn: Callable[[Any], Any],
                  other_key_fn: Callable[[Any], Any],
                  mapper: Callable[[Any, Any], Any]) -> "BatchStage":
        """Enrich each item with the items of ``other`` (the lookup side) whose
        ``other_key_fn`` equals the item's ``key_fn``: emits ``mapper(item, match)`` per match,
        or ``mapper(item, None)`` when there is none (a left outer join)."""
        other = self._own(other, "hash_join")
        for argument, fn in (("key_fn", key_fn), ("other_key_fn", other_key_fn), ("mapper", mapper)):
            _require_callable(fn, "hash-join", argument)
        return self._add("hash_join", [self._input(), other._input()], key_fn=as_key_fn(key_fn),
                         other_key_fn=as_key_fn(other_key_fn), fn=mapper)

    def merge(self, other: "BatchStage") -> "BatchStage":
        """The items of both stages."""
        other = self._own(other, "merge")
        return self._add("merge", [self._input(), other._input()])

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


class StageWithKey:
    """A stage grouped by a key, ready for a keyed aggregation."""

    def __init__(self, stage: BatchStage, key_fn: Callable[[Any], Any]) -> None:
        self._stage = stage
        self._key_fn = key_fn

    def aggregate(self, operation: AggregateOperation) -> BatchStage:
        """Aggregate the items of each key; emits (key, result) pairs."""
        _check_operation(operation, "group-and-aggregate")
        return self._stage._add("group_aggregate", [self._stage._input()], key_fn=self._key_fn,
                                operation=operation)


class SinkStage(Stage):
    """The end of a branch."""


def _check_operation(operation: Any, stage: str) -> None:
    if not isinstance(operation, AggregateOperation):
        raise PipelineDefinitionError(
            f"stage {stage!r}: expected an AggregateOperation (see jet.AggregateOperations),"
            f" got {type(operation).__name__} {operation!r}")
