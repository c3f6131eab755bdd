"""Spark stream sources: a retried task duplicates nothing, a failed query fails the job."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from jet.connectors.spark.hub import SourceEndpoint
from jet.connectors.spark.streaming_source import SparkStreamReadSpec, SparkStreamSourceSupplier
from jet.core.dag import DAG
from jet.core.edge import Edge
from jet.core.processors import list_sink_p
from jet.execution import JobFailedError

from tests.spark.test_streaming_dag import (CSV_SCHEMA, feed_files_then_end, file_rows, run_dag_with_spark,
                                            write_csv_file)


@dataclass(frozen=True)
class FailingStreamSpec(SparkStreamReadSpec):
    """A CSV stream whose micro-batch tasks fail as ``fails(batch, partition, attempt, rows_sent)`` says."""

    fails: Any = None

    def build(self, spark: Any) -> Any:
        frame = super().build(spark)
        fails = self.fails

        def batches(iterator):
            from pyspark import TaskContext

            context = TaskContext.get()
            batch = int(context.getLocalProperty("streaming.sql.batchId"))
            sent = 0
            for arrow_batch in iterator:
                yield arrow_batch
                sent += arrow_batch.num_rows
                if fails(batch, context.partitionId(), context.attemptNumber(), sent):
                    time.sleep(0.5)  # let the member emit what it has
                    raise RuntimeError(f"injected failure in micro-batch {batch}")

        return frame.mapInArrow(batches, frame.schema)


def _run(spark, directory, spec, batches) -> list:
    received: list = []

    def make_dag() -> DAG:
        dag = DAG()
        source = dag.new_vertex("spark-stream", SparkStreamSourceSupplier(spec), 1)
        sink = dag.new_vertex("sink", list_sink_p(received), 1)
        dag.edge(Edge.between(source, sink))
        return dag

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    spark.conf.set("spark.sql.files.openCostInBytes", "200000")  # each file: 2 partitions, the first of ~8000 rows
    spark.conf.set("spark.sql.files.maxPartitionBytes", "250000")
    try:
        run_dag_with_spark(spark, make_dag, also=lambda: feed_files_then_end(directory, batches))
    finally:
        for key in ("arrow.maxRecordsPerBatch", "files.openCostInBytes", "files.maxPartitionBytes"):
            spark.conf.unset(f"spark.sql.{key}" if key.startswith("files") else f"spark.sql.execution.{key}")
    return received


def test_a_task_failing_mid_micro_batch_loses_and_duplicates_nothing(spark, tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    batches = [file_rows(index, 12_000) for index in range(3)]  # 2 partitions each
    write_csv_file(directory, "part-000.csv", batches[0])
    before = SourceEndpoint.dropped_rows_total
    spec = FailingStreamSpec("csv", str(directory), {"maxFilesPerTrigger": "1"}, CSV_SCHEMA,
                             fails=lambda batch, partition, attempt, sent: partition == 0 and attempt == 0
                             and sent >= 5000)  # after a chunk of 4096 rows went out
    received = _run(spark, directory, spec, batches)
    assert sorted(received) == sorted(row for rows in batches for row in rows)
    assert SourceEndpoint.dropped_rows_total - before >= 4096  # the retries re-sent rows: dropped


def test_a_failing_streaming_query_fails_the_job_with_sparks_message(spark, tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    batches = [file_rows(index, 300) for index in range(2)]
    write_csv_file(directory, "part-000.csv", batches[0])
    spec = FailingStreamSpec("csv", str(directory), {}, CSV_SCHEMA, fails=lambda *_: True)
    with pytest.raises(JobFailedError) as failure:
        _run(spark, directory, spec, batches)
    text = str(failure.value) + str(getattr(failure.value, "traceback_text", ""))
    assert "the Spark side of 'spark-stream' failed" in text
    assert "injected failure in micro-batch" in text
