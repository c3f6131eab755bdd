"""Aggregate operations over several inputs (Jet's AggregateOperation2/3 and
CoAggregateOperationBuilder).

A co-aggregation keeps one accumulator per input in a list ``[acc0, acc1, ...]``: an item of
input ``i`` is folded into ``acc[i]`` by that input's operation (Jet's ``andAccumulate0/1/2``),
``combine`` and ``deduct`` work part by part (present when every part has them), and ``finish``
gives a tuple of the parts' results (or ``finish_fn`` of that tuple).

A processor that reads several inputs folds input ``i`` with :meth:`CoAggregateOperation.for_input`
``(i)``: an ordinary :class:`AggregateOperation` that accumulates into part ``i`` only and shares
create, combine, deduct and finish with the whole, so the single-input window and aggregation
processors run it unchanged. The plain ``accumulate`` takes ``(ordinal, item)`` pairs (items
tagged by their input).

Accumulating returns a new outer list: a snapshot may hold the previous one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

from jet.core.aggregate import AggregateOperation

_MISSING = object()


@dataclass(frozen=True)
class CoAggregateOperation(AggregateOperation):
    """An AggregateOperation of ``len(parts)`` inputs; see the module docstring."""

    parts: tuple = ()
    views: tuple = field(default=(), repr=False, compare=False)

    @property
    def arity(self) -> int:
        """The number of inputs."""
        return len(self.parts)

    def for_input(self, ordinal: int) -> AggregateOperation:
        """The operation that folds items of input ``ordinal`` (a plain AggregateOperation)."""
        return self.views[ordinal]


def co_aggregate(parts: Sequence[AggregateOperation],
                 finish_fn: Callable[[tuple], Any] | None = None) -> CoAggregateOperation:
    """An operation folding input ``i`` with ``parts[i]``; finishes to a tuple of their results
    (or ``finish_fn(tuple)``)."""
    parts = tuple(parts)
    if len(parts) < 2:
        raise ValueError(f"a co-aggregation needs at least two operations, got {len(parts)}")
    for position, part in enumerate(parts):
        if not isinstance(part, AggregateOperation):
            raise TypeError(f"co-aggregation: operation {position} is {part!r}, not an AggregateOperation")
        if isinstance(part, CoAggregateOperation):
            raise TypeError(f"co-aggregation: operation {position} ({part.name!r}) already takes"
                            " several inputs; give single-input operations")
    if finish_fn is not None and not callable(finish_fn):
        raise TypeError(f"co-aggregation: finish_fn must be callable, got {finish_fn!r}")
    combine = _part_wise(parts, "combine")
    deduct = _part_wise(parts, "deduct")
    finish = _finishing([part.finish for part in parts], finish_fn)
    export = _finishing([part.export_fn for part in parts], finish_fn)
    create = _creating([part.create for part in parts])
    accumulates = [part.accumulate for part in parts]

    def accumulate_tagged(acc: list, tagged: tuple) -> list:
        ordinal, item = tagged
        acc = list(acc)
        acc[ordinal] = accumulates[ordinal](acc[ordinal], item)
        return acc

    whole = CoAggregateOperation(
        create=create, accumulate=accumulate_tagged, combine=combine, finish=finish,
        name="aggregate" + str(len(parts)) + "(" + ", ".join(p.name for p in parts) + ")",
        deduct=deduct, export=export, parts=parts,
        keeps_every_item=all(part.keeps_every_item for part in parts))
    views = tuple(_view(whole, parts, ordinal) for ordinal in range(len(parts)))
    object.__setattr__(whole, "views", views)
    return whole


# Two inputs get closures without a loop: a window join calls these once per key and frame.
def _part_wise(parts: tuple, name: str) -> Callable[[list, list], list] | None:
    fns = [getattr(part, name) for part in parts]
    if any(fn is None for fn in fns):
        return None
    if len(fns) == 2:
        f0, f1 = fns
        return lambda a, b: [f0(a[0], b[0]), f1(a[1], b[1])]
    return lambda a, b: [fn(x, y) for fn, x, y in zip(fns, a, b)]


def _creating(creates: list) -> Callable[[], list]:
    if len(creates) == 2:
        c0, c1 = creates
        return lambda: [c0(), c1()]
    return lambda: [c() for c in creates]


def _finishing(fns: list, finish_fn: Callable[[tuple], Any] | None) -> Callable[[list], Any]:
    if len(fns) == 2:
        f0, f1 = fns
        parts = lambda acc: (f0(acc[0]), f1(acc[1]))  # noqa: E731
    else:
        parts = lambda acc: tuple([f(a) for f, a in zip(fns, acc)])  # noqa: E731
    if finish_fn is None:
        return parts
    return lambda acc: finish_fn(parts(acc))


def _view(whole: CoAggregateOperation, parts: tuple, ordinal: int) -> AggregateOperation:
    """``whole`` folding items of input ``ordinal`` into its part only."""
    part = parts[ordinal]
    accumulate_part, fold_part = part.accumulate, part.fold_chunk
    keyed_part = part.accumulate_keyed_chunk
    create = whole.create

    def accumulate(acc: list, item: Any) -> list:
        acc = list(acc)
        acc[ordinal] = accumulate_part(acc[ordinal], item)
        return acc

    def accumulate_chunk(acc: list, items: list) -> list:
        acc = list(acc)
        acc[ordinal] = fold_part(acc[ordinal], items)
        return acc

    def accumulate_keyed_chunk(accumulators: dict, keys: Iterable[Any], items: list) -> None:
        keys = keys if isinstance(keys, list) else list(keys)
        get = accumulators.get
        if keyed_part is None:
            for key, item in zip(keys, items):
                acc = get(key, _MISSING)
                accumulators[key] = accumulate(create() if acc is _MISSING else acc, item)
            return
        share: dict = {}
        whole_accs: dict = {}
        for key in dict.fromkeys(keys):
            acc = get(key, _MISSING)
            acc = create() if acc is _MISSING else acc
            whole_accs[key] = acc
            share[key] = acc[ordinal]
        keyed_part(share, keys, items)
        for key, acc in whole_accs.items():
            acc = list(acc)
            acc[ordinal] = share[key]
            accumulators[key] = acc

    return replace(AggregateOperation(create=create, accumulate=accumulate),
                   combine=whole.combine, finish=whole.finish, deduct=whole.deduct,
                   export=whole.export, accumulate_chunk=accumulate_chunk,
                   accumulate_keyed_chunk=accumulate_keyed_chunk,
                   name=f"{whole.name}[{ordinal}]")


class CoAggregateOperationBuilder:
    """Jet's CoAggregateOperationBuilder: ``tag = builder.add(op)`` per input, then
    ``build()``; the result is a tuple indexed by the tags (or ``finish_fn`` of it)."""

    def __init__(self) -> None:
        self._parts: list[AggregateOperation] = []

    def add(self, operation: AggregateOperation) -> int:
        """Add the operation of the next input; returns its tag (the input's ordinal)."""
        if not isinstance(operation, AggregateOperation):
            raise TypeError(f"co_aggregate_builder().add needs an AggregateOperation, got {operation!r}")
        self._parts.append(operation)
        return len(self._parts) - 1

    def build(self, finish_fn: Callable[[tuple], Any] | None = None) -> CoAggregateOperation:
        """The co-aggregation of the operations added, in tag order."""
        return co_aggregate(self._parts, finish_fn)
