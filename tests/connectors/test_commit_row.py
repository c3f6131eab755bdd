"""A Spark write task's result row is built without importing pandas into the Spark worker."""

import subprocess
import sys

import pyarrow as pa

from jet.connectors.spark.arrow_transfer import commit_row


def test_the_commit_row_equals_the_same_row_built_by_pyarrow_from_python_values():
    for partition, rows, attempt in [(0, 0, 0), (7, 10_000_000, 2), (2**40, 2**62, 1)]:
        expected = pa.RecordBatch.from_pydict({"partition": [partition], "rows": [rows], "attempt": [attempt]},
                                              schema=pa.schema([("partition", pa.int64()), ("rows", pa.int64()),
                                                                ("attempt", pa.int64())]))
        assert commit_row(partition, rows, attempt).equals(expected)


def test_building_it_imports_no_pandas():
    probe = ("import sys\nfrom jet.connectors.spark.arrow_transfer import commit_row\n"
             "commit_row(1, 2, 3)\nprint('pandas' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
