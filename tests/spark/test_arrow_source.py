"""The Spark source processor over the Arrow wire format, fed by the real writer code.

Members run in this process with real gRPC servers (tests/spark/harness.py); the "Spark side"
is the writer task's own ``send_partition`` over real links, given hand-made Arrow batches,
then the driver's commit. The oracle is pyarrow over the same batches.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import tell_members, wait_for_vertex
from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.partition_io import send_partition
from jet.connectors.spark.processors import SparkSourceP, SparkWriteFailedError
from jet.core import DAG, Edge
from jet.core.processors.sinks import ListSinkP

from tests.spark.harness import JOB_ID, TOKEN, run_with_spark

VERTEX = "spark-in"


class _Job:
    """What run_with_spark needs of a pipeline: a DAG of SparkSourceP -> a list."""

    def __init__(self, make_source, parallelism: int, out: list) -> None:
        self.make_source, self.parallelism, self.out = make_source, parallelism, out

    def to_dag(self, _members: int) -> DAG:
        dag = DAG()
        source = dag.new_vertex(VERTEX, self.make_source, self.parallelism)
        sink = dag.new_vertex("out", lambda: ListSinkP(self.out), 1)
        dag.edge(Edge.between(source, sink).distributed())
        return dag


def _batch(first: int, count: int, label: str = "r") -> pa.RecordBatch:
    ids = list(range(first, first + count))
    return pa.RecordBatch.from_pydict({"id": pa.array(ids, pa.int64()),
                                       "name": pa.array([f"{label}{i}" if i % 7 else None for i in ids]),
                                       "tags": pa.array([[i, i + 1] for i in ids], pa.list_(pa.int64()))})


def _write(partitions: dict[int, list[list[pa.RecordBatch]]], row_type: str = "tuple", chunk_rows: int = 300):
    """A Spark side that sends each partition's attempts in order, then commits the last ones."""
    def side(_spark, _pipeline, addresses) -> None:
        options = JetOptions(job=JOB_ID, vertex=VERTEX, members=tuple(addresses), token=TOKEN,
                             ready_timeout_s=60, chunk_rows=chunk_rows, row_type=row_type)
        owners = wait_for_vertex(options, "source")
        processors = [owners[i] for i in range(len(owners))]
        counts = {}
        for partition, attempts in partitions.items():
            for attempt, batches in enumerate(attempts):
                counts[str(partition)] = send_partition(options, [addresses[m] for m in processors], processors,
                                                        iter(batches), partition, attempt)
        tell_members(options, {"op": p.COMMIT, "counts": counts}, set(processors))
    return side


def test_columnar_source_emits_batches_that_concatenate_to_the_input_once():
    partition0 = [_batch(0, 1000), _batch(1000, 250)]
    partition1 = [_batch(5000, 700)]
    retried = [_batch(5000, 400)]  # a failed first attempt of partition 1 got 400 rows through
    out: list = []
    dropped = spark_hub.SourceEndpoint.dropped_rows_total
    run_with_spark(None, _Job(lambda: SparkSourceP(columnar=True), 2, out), members=2,
                   spark_side=_write({0: [partition0], 1: [retried, partition1]}))
    assert out and all(isinstance(item, pa.RecordBatch) for item in out)
    got = pa.Table.from_batches(out).sort_by("id")
    expected = pa.Table.from_batches(partition0 + partition1).sort_by("id")
    assert got.equals(expected)
    assert spark_hub.SourceEndpoint.dropped_rows_total - dropped == 400


@pytest.mark.parametrize("row_type", ["tuple", "dict"])
def test_row_source_emits_one_item_per_row_as_pyarrow_gives_them(row_type):
    batches = [_batch(0, 900), _batch(900, 10)]
    out: list = []
    run_with_spark(None, _Job(SparkSourceP, 2, out), members=2,
                   spark_side=_write({0: [batches[:1]], 3: [batches[1:]]}, row_type=row_type))
    rows = pa.Table.from_batches(batches).to_pylist()  # dicts by column name
    if row_type == "tuple":
        assert sorted(out, key=lambda row: row[0]) == [tuple(row.values()) for row in rows]
    else:
        assert sorted(out, key=lambda row: row["id"]) == rows


def test_a_write_with_another_schema_fails_the_source_naming_both_schemas(forget_failed_jobs):
    other = pa.RecordBatch.from_pydict({"id": pa.array([1, 2], pa.int32()), "name": pa.array(["a", "b"])})
    out: list = []
    with pytest.raises(Exception) as failure:
        run_with_spark(None, _Job(SparkSourceP, 1, out), members=1,
                       spark_side=_write({0: [[_batch(0, 10)]], 1: [[other]]}), timeout=60)
    message = str(failure.value)
    assert "differs from the schema of the first write" in message, message
    assert "id: int32, name: string" in message and "id: int64, name: string, tags: list<item: int64>" in message
    assert isinstance(failure.value, SparkWriteFailedError) or "SparkWriteFailedError" in message
