"""jet.core.columnar: the row <-> RecordBatch conversions, checked against plain Python values."""

import pickle

import pyarrow as pa
import pytest

from jet.core.columnar import batch_to_rows, is_batch, rows_to_batch

ROWS = [(1, "a", 0.5), (2, None, 1.5), (3, "c", None)]


def test_is_batch_tells_record_batches_from_other_items():
    batch = pa.RecordBatch.from_pydict({"x": [1, 2]})
    assert is_batch(batch)
    assert not is_batch(pa.Table.from_batches([batch]))
    assert not is_batch((1, 2))
    assert not is_batch({"x": 1})
    assert not is_batch(None)


def test_tuple_rows_round_trip_with_spark_style_names():
    batch = rows_to_batch(ROWS)
    assert batch.schema.names == ["_1", "_2", "_3"]
    assert batch.num_rows == 3
    assert batch_to_rows(batch) == ROWS
    assert batch.column(0).to_pylist() == [1, 2, 3]


def test_dict_rows_become_columns_by_key():
    rows = [{"key": "k1", "value": 1}, {"key": "k2", "value": 2}]
    batch = rows_to_batch(rows)
    assert batch.schema.names == ["key", "value"]
    assert batch_to_rows(batch, "dict") == rows
    assert batch_to_rows(batch) == [("k1", 1), ("k2", 2)]


def test_schema_names_and_types_the_columns():
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float32())])
    batch = rows_to_batch(ROWS, schema)
    assert batch.schema == schema
    assert batch_to_rows(batch) == ROWS


def test_empty_rows_give_an_empty_batch_of_the_schema():
    schema = pa.schema([("id", pa.int64())])
    batch = rows_to_batch([], schema)
    assert batch.num_rows == 0 and batch.schema == schema
    assert batch_to_rows(batch) == []


def test_batches_survive_pickling_as_items_do_over_distributed_edges():
    batch = rows_to_batch(ROWS)
    assert batch_to_rows(pickle.loads(pickle.dumps(batch))) == ROWS


@pytest.mark.parametrize("rows, message", [
    ([1, 2], "dict or tuple rows"),
    ([(1, 2), (3,)], "one width"),
    ([(), ()], "at least one value"),
])
def test_bad_rows_are_rejected_with_the_offending_value(rows, message):
    with pytest.raises((TypeError, ValueError), match=message):
        rows_to_batch(rows)


def test_schema_of_another_width_is_rejected():
    with pytest.raises(ValueError, match="2 fields"):
        rows_to_batch([(1,)], pa.schema([("a", pa.int64()), ("b", pa.int64())]))


def test_unknown_row_type_is_rejected():
    with pytest.raises(ValueError, match="row_type"):
        batch_to_rows(rows_to_batch(ROWS), "list")


PREFETCH_PROBE = """
import sys, threading, time
from jet.core.columnar import prefetch_arrow
assert "pandas" not in sys.modules and "pyarrow" not in sys.modules
prefetch_arrow()
prefetch_arrow()  # once per process
deadline = time.monotonic() + 60
while "pandas" not in sys.modules and time.monotonic() < deadline:
    time.sleep(0.01)
names = [t.name for t in threading.enumerate()]
print("pandas" in sys.modules, "pyarrow" in sys.modules, names.count("jet-arrow-prefetch") <= 1)
"""


def test_prefetch_loads_pyarrow_and_the_pandas_its_first_array_imports_in_the_background():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PREFETCH_PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]
