"""AggregateOperation: how to fold items into an accumulator, merge accumulators and finish."""

from __future__ import annotations

from collections import _count_elements  # type: ignore[attr-defined]
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from jet.core.batch_fold import COUNTED_ROWS, BatchAggregation, summed_values
from jet.core.functions import map_each, whole_item

_MISSING = object()


def identity(value: Any) -> Any:
    """The default ``finish``: the accumulator is the result (windows skip calling it)."""
    return value


@dataclass(frozen=True)
class AggregateOperation:
    """The four primitives of an aggregation, in functional style.

    create() -> acc                  a new, empty accumulator
    accumulate(acc, item) -> acc     fold one item in (may mutate and return ``acc``)
    combine(acc, acc2) -> acc        merge a partial accumulator in; None for single-stage only
    finish(acc) -> result            the result reported for the accumulator

    Two optional fast paths let an operation take a whole chunk in one call, which is what
    makes counting and summing cheap in Python:

    accumulate_chunk(acc, items) -> acc
    accumulate_keyed_chunk(accumulators: dict, keys: iterable, items: list) -> None
        fold ``items`` into ``accumulators[key]`` (``keys`` lines up with ``items``)

    Two more let windows do less work:

    deduct(acc, acc2) -> acc         undo ``combine(acc, acc2)``: a sliding window subtracts
                                     the frame that leaves instead of recombining every frame
    export(acc) -> result            like ``finish`` but leaves ``acc`` usable and unshared
                                     (early window results); None means ``finish``

    And one lets a grouped aggregation fold whole Arrow batches in C++ (see
    :mod:`jet.core.batch_fold`): ``batch_aggregation``, the Arrow sums and counts an accumulator
    is made of, when its values are columns a getter reads.

    ``keeps_every_item``: the accumulator holds every item folded in (``to_list``, and so a
    window join). A first stage before the shuffle would then send as much as the items
    themselves and fold them twice, so the planner aggregates such windows in one stage.
    """

    create: Callable[[], Any]
    accumulate: Callable[[Any, Any], Any]
    combine: Callable[[Any, Any], Any] | None = None
    finish: Callable[[Any], Any] = identity
    accumulate_chunk: Callable[[Any, list], Any] | None = None
    accumulate_keyed_chunk: Callable[[dict, Iterable[Any], list], None] | None = None
    name: str = "aggregate"
    deduct: Callable[[Any, Any], Any] | None = None
    export: Callable[[Any], Any] | None = None
    batch_aggregation: BatchAggregation | None = None
    keeps_every_item: bool = False

    def __post_init__(self) -> None:
        for field_name in ("create", "accumulate", "finish"):
            value = getattr(self, field_name)
            if not callable(value):
                raise TypeError(f"AggregateOperation.{field_name} must be callable, got {value!r}")
        for field_name in ("combine", "accumulate_chunk", "accumulate_keyed_chunk", "deduct",
                           "export"):
            value = getattr(self, field_name)
            if value is not None and not callable(value):
                raise TypeError(
                    f"AggregateOperation.{field_name} must be callable or None, got {value!r}")

    def fold_chunk(self, acc: Any, items: list) -> Any:
        """Fold a list of items into ``acc`` by the fastest path this operation has."""
        if self.accumulate_chunk is not None:
            return self.accumulate_chunk(acc, items)
        accumulate = self.accumulate
        for item in items:
            acc = accumulate(acc, item)
        return acc

    def fold_keyed_chunk(self, accumulators: dict, key_fn: Callable[[Any], Any],
                         items: list) -> None:
        """Fold each item into ``accumulators[key_fn(item)]``, creating accumulators as needed."""
        keys = items if key_fn is whole_item else map_each(key_fn, items)
        if self.accumulate_keyed_chunk is not None:
            self.accumulate_keyed_chunk(accumulators, keys, items)
            return
        get, create, accumulate = accumulators.get, self.create, self.accumulate
        for key, item in zip(keys, items):
            acc = get(key, _MISSING)
            if acc is _MISSING:
                acc = accumulators[key] = create()
            result = accumulate(acc, item)
            if result is not acc:  # an accumulator changed in place is stored already: one hash less
                accumulators[key] = result

    def combine_into(self, accumulators: dict, entries: Iterable[tuple[Any, Any]]) -> None:
        """Merge (key, partial accumulator) entries into ``accumulators``."""
        combine = self.combine
        if combine is None:
            raise ValueError(f"aggregate operation {self.name!r} has no combine function")
        get = accumulators.get
        for key, partial in entries:
            acc = get(key, _MISSING)
            accumulators[key] = partial if acc is _MISSING else combine(acc, partial)

    @property
    def export_fn(self) -> Callable[[Any], Any]:
        """``export``, or ``finish`` for an operation without one."""
        return self.export if self.export is not None else self.finish

    def with_finish(self, finish: Callable[[Any], Any]) -> "AggregateOperation":
        """The same operation with ``finish`` applied after this one's finish (and export)."""
        inner, inner_export = self.finish, self.export
        return replace(self, finish=lambda acc: finish(inner(acc)),
                       export=None if inner_export is None else lambda acc: finish(inner_export(acc)))


def _count_keyed(accumulators: dict, keys: Iterable[Any], items: list) -> None:
    _count_elements(accumulators, keys)


def _add(a: Any, b: Any) -> Any:
    return a + b


def _subtract(a: Any, b: Any) -> Any:
    return a - b


def counting() -> AggregateOperation:
    """Counts items; keyed counting runs in C over a whole chunk."""
    return AggregateOperation(
        create=int, accumulate=lambda acc, _item: acc + 1, combine=_add,
        accumulate_chunk=lambda acc, items: acc + len(items),
        accumulate_keyed_chunk=_count_keyed, name="counting", deduct=_subtract,
        batch_aggregation=COUNTED_ROWS)


def summing(value_fn: Callable[[Any], Any] = identity) -> AggregateOperation:
    """Sums ``value_fn(item)``."""
    def accumulate_keyed(accumulators: dict, keys: Iterable[Any], items: list) -> None:
        get = accumulators.get
        for key, value in zip(keys, map_each(value_fn, items)):
            accumulators[key] = get(key, 0) + value

    return AggregateOperation(
        create=int, accumulate=lambda acc, item: acc + value_fn(item), combine=_add,
        accumulate_chunk=lambda acc, items: acc + sum(map_each(value_fn, items)),
        accumulate_keyed_chunk=accumulate_keyed, name="summing", deduct=_subtract,
        batch_aggregation=summed_values(value_fn))
