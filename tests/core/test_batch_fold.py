"""Folding whole Arrow batches into keyed accumulators (jet.core.batch_fold), against plain Python
folding the same rows, and the batches it must leave to the row path."""

from __future__ import annotations

import decimal
import math
import random

import pyarrow as pa
import pytest

from jet import AggregateOperations as A
from jet.core.batch_fold import KeyedBatchFolder
from jet.core.processors import accumulate_by_key_p
from jet.core.test_support import TestSupport


def _folder(key_fn, operation, row_type="tuple"):
    return KeyedBatchFolder.for_operation(key_fn, operation, row_type)


def _python_groups(rows, key_of, value_of):
    """key -> (sum of values, count, values): plain Python over the rows, the oracle."""
    groups: dict = {}
    for row in rows:
        total, count = groups.get(key_of(row), (0, 0))
        groups[key_of(row)] = (total + value_of(row), count + 1)
    return groups


def _batch(rows, names, types):
    return pa.RecordBatch.from_arrays([pa.array(list(column), type=kind) for column, kind in zip(zip(*rows), types)],
                                      names=names)


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int32(), pa.uint16(), pa.string(), pa.large_string(), pa.binary()])
def test_sums_counts_and_means_of_batches_equal_python_over_their_rows(key_type):
    rng = random.Random(7)
    make_key = {pa.string(): str, pa.large_string(): str, pa.binary(): lambda k: str(k).encode()}.get(key_type, int)
    keys = [make_key(k) for k in range(40)] + [None]
    rows = [(rng.choice(keys), rng.randint(-10**6, 10**6), rng.uniform(-1e3, 1e3)) for _ in range(5000)]
    batches = [_batch(rows[i:i + 700], ["k", "i", "f"], [key_type, pa.int64(), pa.float64()])
               for i in range(0, len(rows), 700)]
    operation = A.all_of(A.summing(lambda r: r[1]), A.counting(), A.averaging(lambda r: r[2]),
                         A.summing(lambda r: r[-1]), A.counting())
    folder = _folder(lambda r: r[0], operation)
    accumulators: dict = {}
    assert all(folder.fold(accumulators, batch) for batch in batches)

    ints = _python_groups(rows, lambda r: r[0], lambda r: r[1])
    floats = _python_groups(rows, lambda r: r[0], lambda r: r[2])
    assert set(accumulators) == set(ints)
    for key, acc in accumulators.items():
        int_sum, count, mean, float_sum, count_again = operation.finish(acc)
        assert (int_sum, count, count_again) == (ints[key][0], ints[key][1], ints[key][1])
        assert type(int_sum) is int and type(count) is int
        assert math.isclose(float_sum, floats[key][0], rel_tol=1e-9, abs_tol=1e-6)
        assert math.isclose(mean, floats[key][0] / floats[key][1], rel_tol=1e-9, abs_tol=1e-9)


def test_a_batch_adds_to_accumulators_that_already_hold_rows():
    operation = A.all_of(A.summing(lambda r: r[1]), A.counting())
    accumulators = {"a": [10, 2]}
    assert _folder(lambda r: r[0], operation).fold(accumulators, _batch([("a", 5), ("b", 1), ("a", 1)], ["k", "v"],
                                                                         [pa.string(), pa.int64()]))
    assert accumulators == {"a": [16, 4], "b": [1, 1]}


def test_dict_rows_read_columns_by_name():
    operation = A.summing(lambda r: r["amount"])
    folder = _folder(lambda r: r["user"], operation, row_type="dict")
    accumulators: dict = {}
    batch = _batch([("u1", 3), ("u2", 4), ("u1", 5)], ["user", "amount"], [pa.string(), pa.int64()])
    assert folder.fold(accumulators, batch) and accumulators == {"u1": 8, "u2": 4}


class _Counted:
    """A value function that counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, row):
        self.calls += 1
        return self.fn(row)


@pytest.mark.parametrize("row_type", ["tuple", "dict"])
def test_computed_values_are_summed_in_arrow_as_python_sums_them(row_type):
    rng = random.Random(11)
    rows = [(rng.randrange(30), rng.randint(-10**9, 10**9), rng.uniform(-5, 5)) for _ in range(3000)]
    read = (lambda r, i: r[i]) if row_type == "tuple" else (lambda r, i: r["kif"[i]])
    int_value, float_value = _Counted(lambda r: read(r, 1) * 3 - 1), _Counted(lambda r: read(r, 2) * 1.5)
    operation = A.all_of(A.summing(int_value), A.averaging(float_value), A.counting())
    key = (lambda r: r[0]) if row_type == "tuple" else (lambda r: r["k"])
    folder = _folder(key, operation, row_type)
    accumulators: dict = {}
    batches = [_batch(rows[i:i + 500], ["k", "i", "f"], [pa.int64(), pa.int64(), pa.float64()])
               for i in range(0, len(rows), 500)]
    assert all(folder.fold(accumulators, batch) for batch in batches)
    assert int_value.calls == float_value.calls == len(rows)  # once per row, as the row path calls them
    ints = _python_groups(rows, lambda r: r[0], lambda r: r[1] * 3 - 1)
    floats = _python_groups(rows, lambda r: r[0], lambda r: r[2] * 1.5)
    assert set(accumulators) == set(ints)
    for k, acc in accumulators.items():
        total, mean, count = operation.finish(acc)
        assert (total, count) == (ints[k][0], ints[k][1]) and type(total) is int
        assert math.isclose(mean, floats[k][0] / floats[k][1], rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("value_fn, expected_type", [
    (lambda r: r[1] > 2, int),                                   # booleans: Python adds them as 1 and 0
    (lambda r: decimal.Decimal(r[1]) / 4, decimal.Decimal),      # decimals: exact
    (lambda r: 2 ** 62 + r[1], int),                             # sums past int64: Python's big ints
    (lambda r: 2 ** 70 if r[1] == 3 else r[1], int),             # a value past int64
    (lambda r: float(r[1]) if r[1] % 2 else r[1], float),        # ints and floats mixed
], ids=["bool", "decimal", "sum-past-int64", "value-past-int64", "mixed"])
def test_computed_values_arrow_would_add_differently_are_added_row_by_row_as_python_does(value_fn, expected_type):
    rows = [(k % 3, k) for k in range(40)]
    counted = _Counted(value_fn)
    operation = A.all_of(A.summing(counted), A.counting())
    accumulators = {0: [5, 1]}  # a key that already holds a row
    assert _folder(lambda r: r[0], operation).fold(accumulators, _batch(rows, ["k", "v"], [pa.int64(), pa.int64()]))
    assert counted.calls == len(rows)
    expected = {0: [5, 1], 1: [0, 0], 2: [0, 0]}
    for row in rows:  # the row path's order: each value added to its key's running sum
        expected[row[0]] = [expected[row[0]][0] + value_fn(row), expected[row[0]][1] + 1]
    assert accumulators == expected and type(accumulators[1][0]) is expected_type


def test_a_computed_values_error_is_the_users_and_leaves_the_accumulators_as_they_were():
    def value(row):
        return 1 / (row[1] - 7)

    accumulators = {0: 1.0}
    with pytest.raises(ZeroDivisionError):
        _folder(lambda r: r[0], A.summing(value)).fold(
            accumulators, _batch([(0, k) for k in range(10)], ["k", "v"], [pa.int64(), pa.int64()]))
    assert accumulators == {0: 1.0}


def test_a_batch_left_to_the_row_path_calls_no_value_function():
    counted = _Counted(lambda r: r[1] * 2)
    batch = _batch([(1.5, 2), (2.5, 3)], ["k", "v"], [pa.float64(), pa.int64()])  # float keys: rows
    assert not _folder(lambda r: r[0], A.summing(counted)).fold({}, batch)
    assert counted.calls == 0


@pytest.mark.parametrize("row_type, key_fn, operation", [
    ("tuple", lambda r: r[0] + 1, A.counting()),                       # the key is computed
    ("tuple", lambda r: r[0], A.to_list()),                            # no Arrow form
    ("tuple", lambda r: r[0], A.all_of(A.counting(), A.to_list())),
    ("tuple", lambda r: r["k"], A.counting()),                         # tuple rows read by position
    ("dict", lambda r: r[0], A.counting()),                            # dict rows read by name
    ("dict", lambda r: r["k"], A.summing(lambda r: r[1])),
], ids=["computed-key", "to_list", "all_of-with-to_list", "name-on-tuples",
        "position-on-dicts", "position-value-on-dicts"])
def test_no_folder_unless_the_key_and_every_value_is_a_column_of_such_rows(row_type, key_fn, operation):
    assert _folder(key_fn, operation, row_type) is None


@pytest.mark.parametrize("batch, key_fn, operation", [
    (_batch([("a", 1), ("a", None)], ["k", "v"], [pa.string(), pa.int64()]), lambda r: r[0],
     A.summing(lambda r: r[1])),                                                     # a null value
    (_batch([("a", 1.5)], ["k", "v"], [pa.string(), pa.float32()]), lambda r: r[0],
     A.summing(lambda r: r[1])),                                                     # float32 adds otherwise
    (_batch([(1.5, 1)], ["k", "v"], [pa.float64(), pa.int64()]), lambda r: r[0], A.counting()),  # NaN keys
    (_batch([("a", True)], ["k", "v"], [pa.string(), pa.bool_()]), lambda r: r[0], A.summing(lambda r: r[1])),
    (_batch([("a", 2 ** 62), ("a", 2 ** 62)], ["k", "v"], [pa.string(), pa.int64()]), lambda r: r[0],
     A.summing(lambda r: r[1])),                                                     # the sum leaves int64
    (_batch([("a", 1)], ["k", "v"], [pa.string(), pa.int64()]), lambda r: r[2], A.counting()),  # no such column
    (_batch([("a", 1)], ["k", "v"], [pa.string(), pa.int64()]), lambda r: r[0], A.summing(lambda r: r[5])),
], ids=["null-value", "float32", "float-key", "bool-value", "int64-overflow", "missing-key", "missing-value"])
def test_a_batch_arrow_would_fold_differently_is_refused_and_left_alone(batch, key_fn, operation):
    accumulators = {"a": operation.create()}
    before = dict(accumulators)
    assert _folder(key_fn, operation).fold(accumulators, batch) is False
    assert accumulators == before


def test_a_repeated_column_name_is_no_column_for_dict_rows():
    batch = pa.RecordBatch.from_arrays([pa.array(["a"]), pa.array([1]), pa.array([2])], names=["k", "v", "v"])
    assert _folder(lambda r: r["k"], A.summing(lambda r: r["v"]), "dict").fold({}, batch) is False


def test_the_first_stage_folds_batches_in_arrow_and_the_rest_as_rows_with_python_results():
    """Mixed input: batches Arrow folds, one whose sum would leave int64 (Python's exact big
    integers), one with a float32 column, and plain rows; every key's figures are Python's."""
    big = 2 ** 62
    batches = [
        _batch([("a", 1), ("b", 2), ("a", 3)], ["k", "v"], [pa.string(), pa.int64()]),
        _batch([("a", big), ("a", big), ("c", big)], ["k", "v"], [pa.string(), pa.int64()]),
        _batch([("b", 4), ("c", 5)], ["k", "v"], [pa.string(), pa.int64()]),
    ]
    rows = [row for batch in batches for row in zip(*[column.to_pylist() for column in batch.columns])]
    rows.append(("d", 7))
    oracle = _python_groups(rows, lambda r: r[0], lambda r: r[1])
    operation = A.all_of(A.summing(lambda r: r[1]), A.counting())
    TestSupport.verify_processor(accumulate_by_key_p(lambda r: r[0], operation, "tuple")) \
        .input([*batches, ("d", 7)]) \
        .expect_output([(key, [total, count]) for key, (total, count) in oracle.items()])
