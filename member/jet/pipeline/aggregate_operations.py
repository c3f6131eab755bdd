"""Ready-made aggregate operations (Jet's AggregateOperations)."""

from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable

from jet.core.aggregate import AggregateOperation, counting, summing
from jet.core.co_aggregate import CoAggregateOperation, CoAggregateOperationBuilder, co_aggregate
from jet.core.batch_fold import COUNTED_ROWS, BatchAggregation, all_of_batches, summed_values
from jet.core.functions import map_each, whole_item

class _Nothing:
    """No value yet. Pickles by reference, so it is still the same object on another member."""

    def __reduce__(self) -> str:
        return "_NOTHING"

    def __repr__(self) -> str:
        return "_NOTHING"


_NOTHING = _Nothing()


def _check_callable(fn: Any, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"AggregateOperations.{what} needs a callable, got {fn!r}")


def _averaging(value_fn: Callable[[Any], Any]) -> AggregateOperation:
    def accumulate_keyed(accs: dict, keys: Iterable[Any], items: list) -> None:
        get = accs.get
        for key, value in zip(keys, map_each(value_fn, items)):
            total, count = get(key, (0, 0))
            accs[key] = (total + value, count + 1)

    def accumulate_chunk(acc: tuple, items: list) -> tuple:
        values = list(map_each(value_fn, items))
        return acc[0] + sum(values), acc[1] + len(values)

    return AggregateOperation(
        create=lambda: (0, 0),
        accumulate=lambda acc, item: (acc[0] + value_fn(item), acc[1] + 1),
        combine=lambda a, b: (a[0] + b[0], a[1] + b[1]),
        finish=lambda acc: acc[0] / acc[1] if acc[1] else None,
        accumulate_chunk=accumulate_chunk, accumulate_keyed_chunk=accumulate_keyed,
        name="averaging", deduct=_deduct_average, batch_aggregation=_averaged_values(value_fn))


def _averaged_values(value_fn: Callable[[Any], Any]) -> BatchAggregation:
    return BatchAggregation(summed_values(value_fn).parts + COUNTED_ROWS.parts,
                            lambda acc, figures: (acc[0] + figures[0], acc[1] + figures[1]))


def _deduct_average(acc: tuple, other: tuple) -> tuple:
    # When no item is left the sum is zero exactly, whatever float rounding left over, so the
    # accumulator equals an empty one and a sliding window drops the key.
    count = acc[1] - other[1]
    return (acc[0] - other[0], count) if count else (0, 0)


def _extreme_by(key_fn: Callable[[Any], Any], larger: bool, name: str) -> AggregateOperation:
    def better(a: Any, b: Any) -> Any:
        if a is _NOTHING:
            return b
        if b is _NOTHING:
            return a
        return b if (key_fn(b) > key_fn(a) if larger else key_fn(b) < key_fn(a)) else a

    def accumulate_chunk(acc: Any, items: list) -> Any:
        if not items:
            return acc
        best = (max if larger else min)(items, key=key_fn)
        return better(acc, best)

    def accumulate_keyed(accs: dict, keys: Iterable[Any], items: list) -> None:
        # better() inlined, and the items' own keys in one pass: this runs for every item
        get = accs.get
        if larger:
            for key, item, rank in zip(keys, items, map_each(key_fn, items)):
                best = get(key, _NOTHING)
                if best is _NOTHING or rank > key_fn(best):
                    accs[key] = item
        else:
            for key, item, rank in zip(keys, items, map_each(key_fn, items)):
                best = get(key, _NOTHING)
                if best is _NOTHING or rank < key_fn(best):
                    accs[key] = item

    return AggregateOperation(
        create=lambda: _NOTHING, accumulate=better, combine=better,
        finish=lambda acc: None if acc is _NOTHING else acc,
        accumulate_chunk=accumulate_chunk, accumulate_keyed_chunk=accumulate_keyed, name=name)


def _to_list() -> AggregateOperation:
    def accumulate_keyed(accs: dict, keys: Iterable[Any], items: list) -> None:
        setdefault = accs.setdefault
        for key, item in zip(keys, items):
            setdefault(key, []).append(item)

    def accumulate(acc: list, item: Any) -> list:
        acc.append(item)
        return acc

    def accumulate_chunk(acc: list, items: list) -> list:
        acc.extend(items)
        return acc

    return AggregateOperation(create=list, accumulate=accumulate, combine=accumulate_chunk,
                              accumulate_chunk=accumulate_chunk,
                              accumulate_keyed_chunk=accumulate_keyed, name="to_list",
                              export=list, keeps_every_item=True)


def _to_set() -> AggregateOperation:
    def accumulate_keyed(accs: dict, keys: Iterable[Any], items: list) -> None:
        setdefault = accs.setdefault
        for key, item in zip(keys, items):
            setdefault(key, set()).add(item)

    def accumulate(acc: set, item: Any) -> set:
        acc.add(item)
        return acc

    def combine(acc: set, other: set) -> set:
        acc |= other
        return acc

    return AggregateOperation(create=set, accumulate=accumulate, combine=combine,
                              accumulate_chunk=lambda acc, items: combine(acc, set(items)),
                              accumulate_keyed_chunk=accumulate_keyed, name="to_set",
                              export=set)


def _all_of(operations: tuple[AggregateOperation, ...]) -> AggregateOperation:
    for position, operation in enumerate(operations):
        if not isinstance(operation, AggregateOperation):
            raise TypeError(f"AggregateOperations.all_of: argument {position} is {operation!r},"
                            " not an AggregateOperation")
    if any(op.combine is None for op in operations):
        combine = None
    else:
        def combine(a: list, b: list) -> list:
            return [op.combine(x, y) for op, x, y in zip(operations, a, b)]

    if any(op.deduct is None for op in operations):
        deduct = None
    else:
        def deduct(a: list, b: list) -> list:
            return [op.deduct(x, y) for op, x, y in zip(operations, a, b)]

    def accumulate(acc: list, item: Any) -> list:
        return [op.accumulate(a, item) for op, a in zip(operations, acc)]

    return AggregateOperation(
        create=lambda: [op.create() for op in operations],
        accumulate=accumulate,
        combine=combine,
        finish=lambda acc: tuple(op.finish(a) for op, a in zip(operations, acc)),
        accumulate_chunk=lambda acc, items: [op.fold_chunk(a, items) for op, a in zip(operations, acc)],
        name="all_of(" + ", ".join(op.name for op in operations) + ")", deduct=deduct,
        export=lambda acc: tuple(op.export_fn(a) for op, a in zip(operations, acc)),
        accumulate_keyed_chunk=_all_of_keyed(operations, accumulate),
        batch_aggregation=all_of_batches([op.batch_aggregation for op in operations]),
        keeps_every_item=all(op.keeps_every_item for op in operations))


def _all_of_keyed(operations: tuple[AggregateOperation, ...],
                  accumulate: Callable[[list, Any], list]) -> Callable[[dict, Any, list], None] | None:
    """``all_of``'s keyed chunk fold when every operation has one: each operation folds the
    whole chunk at once into its share of the accumulators of the keys the chunk holds (a cost
    per distinct key, not per item). A chunk with about one item per key is folded item by item.
    Each operation's keyed fold creates the accumulator of every key it is given."""
    folds = [op.accumulate_keyed_chunk for op in operations]
    if any(fold is None for fold in folds):
        return None
    creates = [op.create for op in operations]

    def fold_keyed(accumulators: dict, keys: Any, items: list) -> None:
        keys = keys if isinstance(keys, list) else list(keys)
        present = dict.fromkeys(keys)
        get = accumulators.get
        if 2 * len(present) > len(items):
            for key, item in zip(keys, items):
                acc = get(key)
                accumulators[key] = accumulate([c() for c in creates] if acc is None else acc, item)
            return
        shares = []
        for position, fold in enumerate(folds):
            share = {}
            for key in present:
                acc = get(key)
                if acc is not None:
                    share[key] = acc[position]
            fold(share, keys, items)
            shares.append(share)
        for key in present:  # new lists: a snapshot may still be pickling the old ones
            accumulators[key] = [share[key] for share in shares]

    return fold_keyed


def _top_n(n: int, key_fn: Callable[[Any], Any]) -> AggregateOperation:
    def keep(items: list) -> list:
        return heapq.nlargest(n, items, key=key_fn)

    def accumulate(acc: list, item: Any) -> list:
        # acc is sorted largest first. Most items of a long stream do not make the top: one
        # comparison with the smallest kept turns them away (an equal key loses, as in
        # ``nlargest``, which keeps the earlier item); the others are inserted by binary search
        # (after the equal keys), not by sorting the list again
        key = key_fn(item)
        if len(acc) == n and not key > key_fn(acc[-1]):
            return acc
        low, high = 0, len(acc)
        while low < high:
            middle = (low + high) // 2
            if key_fn(acc[middle]) < key:
                high = middle
            else:
                low = middle + 1
        acc.insert(low, item)
        if len(acc) > n:
            acc.pop()
        return acc

    return AggregateOperation(
        create=list, accumulate=accumulate,
        combine=lambda a, b: keep(a + b), accumulate_chunk=lambda acc, items: keep(acc + items),
        name=f"top_n({n})", export=list)


class AggregateOperations:
    """Factories of aggregate operations; combine them with :meth:`all_of`."""

    @staticmethod
    def counting() -> AggregateOperation:
        """The number of items (keyed counting runs in C over whole chunks)."""
        return counting()

    @staticmethod
    def summing(value_fn: Callable[[Any], Any] = whole_item) -> AggregateOperation:
        """The sum of ``value_fn(item)``."""
        _check_callable(value_fn, "summing")
        return summing(value_fn)

    @staticmethod
    def averaging(value_fn: Callable[[Any], Any] = whole_item) -> AggregateOperation:
        """The mean of ``value_fn(item)`` (None for no items)."""
        _check_callable(value_fn, "averaging")
        return _averaging(value_fn)

    @staticmethod
    def min_by(key_fn: Callable[[Any], Any] = whole_item) -> AggregateOperation:
        """The item with the smallest ``key_fn(item)`` (None for no items)."""
        _check_callable(key_fn, "min_by")
        return _extreme_by(key_fn, larger=False, name="min_by")

    @staticmethod
    def max_by(key_fn: Callable[[Any], Any] = whole_item) -> AggregateOperation:
        """The item with the largest ``key_fn(item)`` (None for no items)."""
        _check_callable(key_fn, "max_by")
        return _extreme_by(key_fn, larger=True, name="max_by")

    @staticmethod
    def to_list() -> AggregateOperation:
        """All items in a list (in no particular order across processors)."""
        return _to_list()

    @staticmethod
    def to_set() -> AggregateOperation:
        """The distinct items in a set."""
        return _to_set()

    @staticmethod
    def top_n(n: int, key_fn: Callable[[Any], Any] = whole_item) -> AggregateOperation:
        """The ``n`` items with the largest ``key_fn(item)``, largest first."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"AggregateOperations.top_n needs n >= 1, got {n!r}")
        _check_callable(key_fn, "top_n")
        return _top_n(n, key_fn)

    @staticmethod
    def all_of(*operations: AggregateOperation) -> AggregateOperation:
        """Several aggregations in one pass; the result is a tuple of their results."""
        return _all_of(operations)

    @staticmethod
    def aggregate_operation2(op0: AggregateOperation, op1: AggregateOperation,
                             finish_fn: Callable[[tuple], Any] | None = None) -> CoAggregateOperation:
        """Two inputs in one accumulation (Jet's aggregateOperation2): input 0 folded by
        ``op0``, input 1 by ``op1``; the result is ``(result0, result1)`` or ``finish_fn`` of it."""
        return co_aggregate((op0, op1), finish_fn)

    @staticmethod
    def aggregate_operation3(op0: AggregateOperation, op1: AggregateOperation,
                             op2: AggregateOperation,
                             finish_fn: Callable[[tuple], Any] | None = None) -> CoAggregateOperation:
        """Three inputs in one accumulation (Jet's aggregateOperation3); see
        :meth:`aggregate_operation2`."""
        return co_aggregate((op0, op1, op2), finish_fn)

    @staticmethod
    def co_aggregate_builder() -> CoAggregateOperationBuilder:
        """Any number of inputs: ``tag = builder.add(op)`` per input, then ``builder.build()``."""
        return CoAggregateOperationBuilder()
