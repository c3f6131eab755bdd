"""``all_of``'s keyed chunk fold and the grouped first stage that gathers chunks for it."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core.aggregate import AggregateOperation
from jet.core.processors import accumulate_by_key_p, aggregate_by_key_p
from jet.core.processors.aggregation import KEYED_FOLD_ITEMS
from jet.core.test_support import TestSupport
from jet.pipeline.aggregate_operations import AggregateOperations as Ops

ANY_ORDER = TestSupport.SAME_ITEMS_ANY_ORDER
SUM_AND_COUNT = Ops.all_of(Ops.summing(lambda row: row[1]), Ops.counting())


def oracle(rows: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    sums: dict[int, int] = defaultdict(int)
    counts: dict[int, int] = defaultdict(int)
    for key, value in rows:
        sums[key] += value
        counts[key] += 1
    return {key: (sums[key], counts[key]) for key in sums}


rows_strategy = st.lists(st.tuples(st.integers(0, 40), st.integers(-1000, 1000)), max_size=300)


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy, chunk=st.integers(1, 64))
def test_keyed_fold_matches_plain_python(rows, chunk):
    """Chunks with many items per key take the per-key path, others the per-item one."""
    accumulators: dict = {}
    for start in range(0, len(rows), chunk):
        SUM_AND_COUNT.fold_keyed_chunk(accumulators, lambda row: row[0], rows[start:start + chunk])
    assert {key: SUM_AND_COUNT.finish(acc) for key, acc in accumulators.items()} == oracle(rows)


def test_keyed_fold_replaces_accumulators_instead_of_changing_them():
    """A snapshot pickles accumulators on another thread: a fold must not change them."""
    accumulators: dict = {}
    rows = [(key % 3, key) for key in range(30)]
    SUM_AND_COUNT.fold_keyed_chunk(accumulators, lambda row: row[0], rows)
    before = {key: list(acc) for key, acc in accumulators.items()}
    held = dict(accumulators)
    SUM_AND_COUNT.fold_keyed_chunk(accumulators, lambda row: row[0], rows)
    assert {key: list(acc) for key, acc in held.items()} == before
    assert all(accumulators[key] is not held[key] for key in held)


def test_all_of_without_keyed_folds_has_none():
    largest = AggregateOperation(create=lambda: None, accumulate=lambda acc, x: x if acc is None else max(acc, x))
    assert Ops.all_of(Ops.summing(), largest).accumulate_keyed_chunk is None


def test_grouped_stages_gather_chunks_and_fold_them_all():
    """More input than one gathering, one item at a time or whole, with snapshots in between
    (TestSupport's default): every row counted once."""
    rows = [(i % 50, i) for i in range(KEYED_FOLD_ITEMS + 3000)]
    expected = oracle(rows)
    TestSupport.verify_processor(aggregate_by_key_p(lambda row: row[0], SUM_AND_COUNT)).input(rows) \
        .output_checker(ANY_ORDER).expect_output(list(expected.items()))
    TestSupport.verify_processor(accumulate_by_key_p(lambda row: row[0], SUM_AND_COUNT)).input(rows) \
        .output_checker(ANY_ORDER).expect_output([(key, list(value)) for key, value in expected.items()])
