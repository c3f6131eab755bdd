"""``AggregateOperations.top_n`` against ``heapq.nlargest`` over the whole input, the oracle:
item by item, by chunks and combined from two partial accumulators, with many equal keys (an
equal key keeps the earlier item, as ``nlargest`` does)."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jet.pipeline.aggregate_operations import AggregateOperations

ITEMS = st.lists(st.tuples(st.integers(0, 5), st.integers()), max_size=60)  # (rank, tag): ties galore


def rank(item: tuple) -> int:
    return item[0]


@given(ITEMS, st.integers(1, 8))
def test_item_by_item_equals_nlargest(items, n):
    operation = AggregateOperations.top_n(n, rank)
    acc = operation.create()
    for item in items:
        acc = operation.accumulate(acc, item)
    assert operation.finish(acc) == heapq.nlargest(n, items, key=rank)


@given(ITEMS, st.integers(1, 8), st.integers(0, 60))
def test_chunks_and_combine_equal_nlargest(items, n, cut):
    operation = AggregateOperations.top_n(n, rank)
    first = operation.accumulate_chunk(operation.create(), items[:cut])
    second = operation.create()
    for item in items[cut:]:
        second = operation.accumulate(second, item)
    assert operation.finish(operation.combine(first, second)) == heapq.nlargest(n, items, key=rank)


def test_export_is_a_copy_that_later_items_do_not_change():
    operation = AggregateOperations.top_n(2, rank)
    acc = operation.create()
    for item in [(3, "a"), (1, "b")]:
        acc = operation.accumulate(acc, item)
    early = operation.export(acc)
    acc = operation.accumulate(acc, (9, "c"))
    assert early == [(3, "a"), (1, "b")] and operation.finish(acc) == [(9, "c"), (3, "a")]


@pytest.mark.parametrize("n", [0, -1, 2.5])
def test_n_below_one_is_refused_naming_it(n):
    with pytest.raises(ValueError, match=r"top_n needs n >= 1, got"):
        AggregateOperations.top_n(n, rank)
