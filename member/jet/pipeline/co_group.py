"""Stages of several inputs: windowed and batch co-grouping, window joins, the interval join and
hash joins with several lookup sides (the stage methods in ``stages.py`` delegate here).

Every input is tagged by its position (its ordinal): input ``i`` is grouped by its own key
function and folded by part ``i`` of one :class:`~jet.core.co_aggregate.CoAggregateOperation`.
A window join is a co-grouping whose finish is join-shaped: both sides' items of a key and
window in lists, joined when the window closes. The stages are duck-typed (this module does not
import ``stages.py``, which imports it): a plain stage has ``_input()``/``_own()``/``_add()``; a
keyed one ``_stage`` and ``_key_fn``; a windowed one also ``_definition``. Mistakes of
arguments are refused here, at definition; mistakes of the graph (a batch stage in a window, a
stream without timestamps) at submission by :func:`check_co_group_rules`, naming the stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import Any, Callable, NamedTuple, Sequence

from jet.core.aggregate import AggregateOperation
from jet.core.co_aggregate import CoAggregateOperation, co_aggregate
from jet.core.functions import as_key_fn
from jet.pipeline.aggregate_operations import AggregateOperations
from jet.pipeline.errors import PipelineDefinitionError, require_callable, require_operation
from jet.pipeline.transforms import Input, Transform
from jet.pipeline.window_definition import SessionWindowDefinition

#: The kinds of transforms this module adds.
CO_GROUP_KINDS = ("window_co_aggregate", "co_aggregate", "interval_join", "hash_join_n")
JOIN_HOWS = ("inner", "left")


class IntervalBounds(NamedTuple):
    """A right item joins a left one when ``left.ts - lower_ms <= right.ts <= left.ts + upper_ms``."""

    lower_ms: int
    upper_ms: int


@dataclass(frozen=True)
class CoGroupSpec:
    """What a stage of several inputs needs besides the usual fields (``Transform.co_group``):
    one key function per input (None when not keyed), per lookup side the key of the looked-up
    item (hash joins), the interval of an interval join, and the join kind."""

    key_fns: tuple | None = None
    other_key_fns: tuple | None = None
    interval: IntervalBounds | None = None
    how: str = "left"
    broadcast: int | None = None
    """The input an interval join sends to every processor (``broadcast="left"``: 0), or None."""


class JoinClause(NamedTuple):
    """How an item meets a lookup side of a hash join: ``key_fn(item) == other_key_fn(match)``
    (Jet's ``JoinClause.onKeys``)."""

    key_fn: Callable[[Any], Any]
    other_key_fn: Callable[[Any], Any]

    @staticmethod
    def on_keys(key_fn: Callable[[Any], Any], other_key_fn: Callable[[Any], Any]) -> "JoinClause":
        return JoinClause(key_fn, other_key_fn)


# -- what the user gave ---------------------------------------------------------------------------
def _side(stage: Any, other: Any, keyed: bool, what: str) -> tuple[Input, Callable[[Any], Any] | None]:
    """The input and key function of another input of ``stage``'s co-grouping."""
    if hasattr(other, "_definition"):
        raise PipelineDefinitionError(
            f"stage {stage.name!r}: {what} takes the other stages without a window (the first"
            f" stage's window applies to all), got a windowed stage")
    if keyed:
        if not hasattr(other, "_key_fn"):
            raise PipelineDefinitionError(
                f"stage {stage.name!r}: {what} of a keyed stage needs the other stages keyed too"
                f" (other.grouping_key(fn)), got {other!r}")
        return stage._own(other._stage, what)._input(), other._key_fn
    if hasattr(other, "_key_fn"):
        raise PipelineDefinitionError(
            f"stage {stage.name!r}: {what} of a stage without a grouping key needs the other"
            f" stages without one too; group the first stage as well or drop grouping_key")
    return stage._own(other, what)._input(), None


def _operands(stage: Any, arity: int, args: Sequence[Any], what: str) -> tuple[list, CoAggregateOperation]:
    """(other stages, operation) from Jet's two forms: ``(op0, stage1, op1, ...)`` or
    ``(stage1, ..., co_op)``."""
    usage = (f"stage {stage.name!r}: {what} takes (op0, stage1, op1{', stage2, op2' if arity == 3 else ''})"
             f" or (stage1{', stage2' if arity == 3 else ''}, AggregateOperations.aggregate_operation{arity}(...))")
    if len(args) == arity and isinstance(args[-1], AggregateOperation):
        operation = args[-1]
        if not isinstance(operation, CoAggregateOperation) or operation.arity != arity:
            raise PipelineDefinitionError(f"{usage}; the operation {operation.name!r} does not take {arity} inputs")
        return list(args[:-1]), operation
    if len(args) == 2 * arity - 1:
        operations = list(args[0::2])
        for operation in operations:
            require_operation(operation, stage.name)
            if isinstance(operation, CoAggregateOperation):
                raise PipelineDefinitionError(f"{usage}; {operation.name!r} already takes several inputs")
        return list(args[1::2]), co_aggregate(operations)
    raise PipelineDefinitionError(f"{usage}, got {len(args)} argument(s)")


# -- windows --------------------------------------------------------------------------------------
def window_co_group(window_stage: Any, others: Sequence[Any], operation: CoAggregateOperation,
                    name: str | None = None) -> Any:
    """The stage of ``window_stage``'s window over its stage and ``others``, folded by ``operation``."""
    stage, key_fn, definition = window_stage._stage, window_stage._key_fn, window_stage._definition
    keyed = key_fn is not None
    what = name or "window aggregate"
    inputs, key_fns = [stage._input()], [key_fn]
    for other in others:
        source, other_key = _side(stage, other, keyed, what)
        inputs.append(source)
        key_fns.append(other_key)
    if name is None:
        name = ("session" if isinstance(definition, SessionWindowDefinition) else "sliding") + \
            f"-window-co-group{len(inputs)}"
    return stage._add("window_co_aggregate", inputs, name=name, operation=operation, window=definition,
                      co_group=CoGroupSpec(tuple(key_fns) if keyed else None), timestamped=True)


def window_aggregate_n(window_stage: Any, arity: int, args: Sequence[Any]) -> Any:
    """``window(w).aggregate2/3(...)`` in either of Jet's forms."""
    others, operation = _operands(window_stage._stage, arity, args, f"aggregate{arity}")
    return window_co_group(window_stage, others, operation)


def _joined(mapper: Callable[[Any, Any], Any], inner: bool, parts: tuple) -> list:
    lefts, rights = parts
    if not rights:
        return [] if inner else [r for r in (mapper(left, None) for left in lefts) if r is not None]
    return [r for r in (mapper(left, right) for left in lefts for right in rights) if r is not None]


def window_join(window_stage: Any, other: Any, mapper: Callable[[Any, Any], Any], how: str) -> Any:
    """Join two keyed streams per key and window: ``mapper(left, right)`` for each pair (and
    ``mapper(left, None)`` for a left item without a match when ``how="left"``)."""
    stage = window_stage._stage
    require_callable(mapper, stage.name, "the join mapper")
    if how not in JOIN_HOWS:
        raise PipelineDefinitionError(f"stage {stage.name!r}: join how must be 'inner' or 'left', got {how!r}")
    if window_stage._key_fn is None:
        raise PipelineDefinitionError(
            f"stage {stage.name!r}: a window join needs keyed stages:"
            " left.grouping_key(k).window(w).join(right.grouping_key(k2), mapper)")
    to_list = AggregateOperations.to_list()
    operation = co_aggregate((to_list, to_list), partial(_joined, mapper, how == "inner"))
    grouped = window_co_group(window_stage, [other], operation, name="window-join")
    return grouped.flat_map(attrgetter("result")).set_name("window-join-results")


class WindowAggregateBuilder:
    """Jet's WindowAggregateBuilder: co-group any number of streams in one window.

    ``builder = stage.window(w).aggregate_builder(op0)``, ``tag = builder.add(other, op)`` per
    other stream (keyed when the first is), ``builder.build()``: each window's result is a tuple
    indexed by the tags (0 for the first stage), or ``finish_fn`` of it."""

    def __init__(self, window_stage: Any, operation0: AggregateOperation) -> None:
        require_operation(operation0, window_stage._stage.name)
        self._window_stage = window_stage
        self._others: list = []
        self._operations = [operation0]

    def add(self, other: Any, operation: AggregateOperation) -> int:
        """Another input and its operation; returns its tag."""
        require_operation(operation, self._window_stage._stage.name)
        self._others.append(other)
        self._operations.append(operation)
        return len(self._operations) - 1

    def build(self, finish_fn: Callable[[tuple], Any] | None = None) -> Any:
        """The stage of the co-grouped windows."""
        if not self._others:
            raise PipelineDefinitionError(f"stage {self._window_stage._stage.name!r}: aggregate_builder"
                                          " needs at least one other stage (builder.add(stage, op))")
        if finish_fn is not None:
            require_callable(finish_fn, self._window_stage._stage.name, "finish_fn")
        return window_co_group(self._window_stage, self._others, co_aggregate(self._operations, finish_fn))


# -- interval join --------------------------------------------------------------------------------
_BROADCAST_SIDES = {None: None, "left": 0, "right": 1}


def interval_join(keyed_stage: Any, other: Any, lower_ms: int, upper_ms: int,
                  mapper: Callable[[Any, Any], Any], broadcast: str | None = None) -> Any:
    """``mapper(left, right)`` for each left and right item of a key with ``right.ts`` in
    ``[left.ts - lower_ms, left.ts + upper_ms]``, emitted at the later timestamp of the two;
    ``broadcast``: the side ("left" or "right") sent to every member, or None."""
    stage = keyed_stage._stage
    require_callable(mapper, stage.name, "the interval join mapper")
    if not isinstance(broadcast, (str, type(None))) or broadcast not in _BROADCAST_SIDES:
        raise PipelineDefinitionError(f"stage {stage.name!r}: interval_join broadcast must be 'left', 'right'"
                                      f" or None, got {broadcast!r}")
    for argument, value in (("lower_ms", lower_ms), ("upper_ms", upper_ms)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise PipelineDefinitionError(f"stage {stage.name!r}: interval_join {argument} must be an int (ms),"
                                          f" got {value!r}")
    if lower_ms + upper_ms < 0:
        raise PipelineDefinitionError(f"stage {stage.name!r}: interval_join's interval"
                                      f" [ts - {lower_ms}, ts + {upper_ms}] is empty")
    source, other_key = _side(stage, other, True, "interval_join")
    return stage._add("interval_join", [stage._input(), source], name="interval-join",
                      fn=mapper, timestamped=True,
                      co_group=CoGroupSpec((keyed_stage._key_fn, other_key), interval=IntervalBounds(lower_ms, upper_ms),
                                           broadcast=_BROADCAST_SIDES[broadcast]))


# -- batches --------------------------------------------------------------------------------------
def co_aggregate_stage(stage_or_keyed: Any, others: Sequence[Any], operation: CoAggregateOperation) -> Any:
    """A batch co-grouping: keyed gives ``(key, result)`` per key, else one result."""
    keyed = hasattr(stage_or_keyed, "_key_fn")
    stage = stage_or_keyed._stage if keyed else stage_or_keyed
    what = f"aggregate{len(others) + 1}"
    inputs, key_fns = [stage._input()], [stage_or_keyed._key_fn if keyed else None]
    for other in others:
        source, other_key = _side(stage, other, keyed, what)
        inputs.append(source)
        key_fns.append(other_key)
    return stage._add("co_aggregate", inputs, name="co-group-and-aggregate" if keyed else "co-aggregate",
                      operation=operation, co_group=CoGroupSpec(tuple(key_fns) if keyed else None))


def aggregate_n(stage_or_keyed: Any, arity: int, args: Sequence[Any]) -> Any:
    """A batch stage's ``aggregate2/3(...)`` in either of Jet's forms."""
    stage = getattr(stage_or_keyed, "_stage", stage_or_keyed)
    others, operation = _operands(stage, arity, args, f"aggregate{arity}")
    return co_aggregate_stage(stage_or_keyed, others, operation)


def hash_join_n(stage: Any, sides: Sequence[tuple[Any, Any]], mapper: Callable[..., Any], how: str) -> Any:
    """``mapper(item, match1, ..., matchN)`` per combination of matches on the lookup sides."""
    require_callable(mapper, stage.name, "the hash join mapper")
    if how not in JOIN_HOWS:
        raise PipelineDefinitionError(f"stage {stage.name!r}: hash join how must be 'inner' or 'left', got {how!r}")
    inputs, key_fns, other_key_fns = [stage._input()], [], []
    for other, clause in sides:
        if not (isinstance(clause, tuple) and len(clause) == 2):
            raise PipelineDefinitionError(f"stage {stage.name!r}: a hash join side needs a JoinClause"
                                          f" (JoinClause.on_keys(key_fn, other_key_fn)), got {clause!r}")
        for argument, fn in zip(("key_fn", "other_key_fn"), clause):
            require_callable(fn, "hash-join", argument)
        inputs.append(stage._own(other, "hash_join")._input())
        key_fns.append(as_key_fn(clause[0]))
        other_key_fns.append(as_key_fn(clause[1]))
    return stage._add("hash_join_n", inputs, name="hash-join", fn=mapper,
                      co_group=CoGroupSpec(tuple(key_fns), tuple(other_key_fns), how=how))


class HashJoinBuilder:
    """Jet's HashJoinBuilder: ``tag = builder.add(lookup_stage, JoinClause.on_keys(k, k2))`` per
    lookup side, then ``builder.build(mapper)`` with ``mapper(item, matches)``, ``matches[tag]``
    being that side's match (None when it has none, in a left outer join)."""

    def __init__(self, stage: Any) -> None:
        self._stage = stage
        self._sides: list = []

    def add(self, other: Any, clause: JoinClause) -> int:
        """A lookup side; returns its tag."""
        self._sides.append((other, clause))
        return len(self._sides) - 1

    def build(self, mapper: Callable[[Any, tuple], Any], how: str = "left") -> Any:
        """The joined stage."""
        if not self._sides:
            raise PipelineDefinitionError(f"stage {self._stage.name!r}: hash_join_builder needs a lookup side"
                                          " (builder.add(stage, clause))")
        require_callable(mapper, self._stage.name, "the hash join mapper")
        return hash_join_n(self._stage, self._sides, partial(_with_matches, mapper), how)


def _with_matches(mapper: Callable[[Any, tuple], Any], item: Any, *matches: Any) -> Any:
    return mapper(item, matches)


# -- checks at submission -------------------------------------------------------------------------
def check_co_group_rules(transform: Transform) -> None:
    """Raise PipelineDefinitionError, naming the stage, when a co-grouping's inputs cannot run."""
    kind, name = transform.kind, transform.name
    stages = [source.transform for source in transform.inputs]
    if kind in ("window_co_aggregate", "interval_join"):
        for upstream in stages:
            if not upstream.stream:
                _fail(name, f"{upstream.name!r} is a batch stage; windows and interval joins take streams"
                            " (aggregate2/3 without a window co-groups batch stages)")
            if not upstream.timestamped:
                _fail(name, f"the stream {upstream.name!r} has no timestamps: give it timestamps"
                            " (with_timestamps on its source, or add_timestamps)")
    if kind == "window_co_aggregate":
        for problem in transform.window.problems():
            _fail(name, f"{transform.window!r}: {problem}")
        if transform.operation.combine is None and not getattr(transform.window, "is_tumbling", False):
            _fail(name, f"{transform.window!r} merges partial results, and {transform.operation.name!r}"
                        " has no combine function")
    elif kind == "co_aggregate":
        for upstream in stages:
            if upstream.stream:
                _fail(name, f"{upstream.name!r} is a stream: co-group streams in a window"
                            " (window(WindowDefinition...).aggregate2(...))")
    elif kind == "hash_join_n":
        for upstream in stages[1:]:
            if upstream.stream:
                _fail(name, f"the lookup side of a hash join must be a batch stage, and {upstream.name!r}"
                            " is a stream")


def _fail(stage: str, message: str) -> None:
    raise PipelineDefinitionError(f"stage {stage!r}: {message}")
