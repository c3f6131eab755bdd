"""Keyed chunk folds (``AggregateOperation.fold_keyed_chunk``) against plain Python: the generic
per-item path, whatever its accumulators do, and ``min_by``/``max_by``'s own keyed fold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core.aggregate import AggregateOperation
from jet.pipeline.aggregate_operations import AggregateOperations as Ops

rows_strategy = st.lists(st.tuples(st.integers(0, 12), st.integers(-20, 20), st.integers()), max_size=300)


def folded(operation: AggregateOperation, rows: list, chunk: int) -> dict:
    accumulators: dict = {}
    for start in range(0, len(rows), chunk):
        operation.fold_keyed_chunk(accumulators, lambda row: row[0], rows[start:start + chunk])
    return {key: operation.finish(acc) for key, acc in accumulators.items()}


def groups(rows: list) -> dict[int, list]:
    grouped: dict[int, list] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    return grouped


def _append(acc: list, row: tuple) -> list:
    acc.append(row[1])
    return acc


def _add(acc: int, row: tuple) -> int:
    return acc + row[1]


def _append_or_restart(acc: list, row: tuple) -> list:
    """Changes its accumulator in place, but starts a new one on a negative value."""
    if row[1] < 0:
        return [row[1]]
    acc.append(row[1])
    return acc


IN_PLACE = AggregateOperation(create=list, accumulate=_append, finish=tuple)
NEW_VALUE = AggregateOperation(create=int, accumulate=_add, finish=lambda acc: acc)
MIXED = AggregateOperation(create=list, accumulate=_append_or_restart, finish=tuple)


def _restarted(values: list[int]) -> tuple:
    result: list[int] = []
    for value in values:
        result = [value] if value < 0 else result + [value]
    return tuple(result)


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, chunk=st.integers(1, 40))
def test_the_generic_fold_keeps_what_each_accumulate_returns(rows, chunk):
    """Accumulators changed in place, replaced by a new value every time, or now and then."""
    grouped = groups(rows)
    assert folded(IN_PLACE, rows, chunk) == {key: tuple(r[1] for r in rs) for key, rs in grouped.items()}
    assert folded(NEW_VALUE, rows, chunk) == {key: sum(r[1] for r in rs) for key, rs in grouped.items()}
    assert folded(MIXED, rows, chunk) == {key: _restarted([r[1] for r in rs]) for key, rs in grouped.items()}


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, chunk=st.integers(1, 40))
def test_min_by_and_max_by_keep_the_first_of_equal_ranks(rows, chunk):
    """Ranks repeat (values -20..20), so which of equal rows is kept shows: the first, as
    Python's ``min`` and ``max`` keep, across chunk boundaries too."""
    grouped = groups(rows)
    rank = lambda row: row[1]  # noqa: E731
    assert folded(Ops.max_by(rank), rows, chunk) == {key: max(rs, key=rank) for key, rs in grouped.items()}
    assert folded(Ops.min_by(rank), rows, chunk) == {key: min(rs, key=rank) for key, rs in grouped.items()}


def test_min_by_and_max_by_fold_into_accumulators_made_by_create():
    """A key's accumulator may exist before any item (``create()``: no value yet)."""
    for operation, expected in ((Ops.max_by(lambda row: row[1]), (1, 5, 0)), (Ops.min_by(lambda row: row[1]), (1, -3, 0))):
        accumulators = {1: operation.create()}
        operation.fold_keyed_chunk(accumulators, lambda row: row[0], [(1, 5, 0), (1, -3, 0)])
        assert operation.finish(accumulators[1]) == expected
