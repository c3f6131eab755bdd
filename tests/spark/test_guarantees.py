"""Flow control, failures and errors of the jet format."""

from __future__ import annotations

import itertools
import time

import pytest
from jet.cluster.edges.flow_control import COMPRESSED_SEQ_UNIT_LOG2, INITIAL_RECEIVE_WINDOW_COMPRESSED
from jet.connectors import Sinks, Sources
from jet.connectors.spark.hub import SourceEndpoint
from jet.connectors.spark.processors import SparkSourceP
from jet.execution import JobFailedError
from jet.pipeline import Pipeline
from jet.pipeline.aggregate_operations import AggregateOperations

from tests.spark.harness import JOB_ID, TOKEN, run_with_spark


def _source_endpoints(plans) -> list:
    """The Spark source processors of every member (after they are initialised)."""
    found = []
    for plan in plans:
        for tasklet in plan.tasklets if hasattr(plan, "tasklets") else []:
            processor = getattr(tasklet, "processor", None)
            if isinstance(processor, SparkSourceP):
                found.append(processor)
    return found


@pytest.mark.slow
def test_a_million_rows_into_a_slow_job_stay_within_the_receive_window(spark, tmp_path, monkeypatch):
    rows = 1_000_000
    peaks: list[int] = []
    original_close = SparkSourceP.close

    def close(self):
        if self.endpoint is not None:
            peaks.append(self.endpoint.max_buffered_bytes)
        original_close(self)

    monkeypatch.setattr(SparkSourceP, "close", close)
    ticks = itertools.count()

    def slow(_item) -> bool:
        if next(ticks) % 512 == 0:
            time.sleep(0.004)
        return True

    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark_query(
        # 2 partitions for 2 source processors: one writer attempt, so one window, per processor
        lambda s: s.range(0, rows, numPartitions=2).selectExpr("id", "repeat('x', 100) AS pad")))
     .filter(slow)
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.list("count")))
    started = time.monotonic()
    results = run_with_spark(spark, pipeline, members=2, timeout=200)
    assert results["count"] == [rows]
    chunk_bytes = 4096 * (8 + 4 + 100 + 56)  # a frame's Arrow columns (long, string offset and
    #                                          bytes) plus the per-item overhead
    bound = (INITIAL_RECEIVE_WINDOW_COMPRESSED + 2 << COMPRESSED_SEQ_UNIT_LOG2) + 2 * chunk_bytes
    total_footprint = rows * (100 + 56)
    assert len(peaks) == 2 and total_footprint / 2 > bound  # the window, not the data, is the limit
    assert max(peaks) <= bound, (peaks, bound)
    assert time.monotonic() - started > 3  # Spark waited for the job


def test_a_task_failing_mid_write_loses_and_duplicates_nothing(spark):
    before = SourceEndpoint.dropped_rows_total

    def failing_once(session):
        def batches(iterator):
            from pyspark import TaskContext

            context = TaskContext.get()
            sent = 0
            for batch in iterator:
                yield batch
                sent += batch.num_rows
                if context.partitionId() == 1 and context.attemptNumber() == 0 and sent >= 12_000:
                    time.sleep(2.0)  # let the member emit what it has (a loaded machine takes a while)
                    raise RuntimeError("injected failure of the first attempt of partition 1")

        frame = session.range(0, 40_000, numPartitions=2)
        return frame.mapInArrow(batches, frame.schema)

    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark_query(failing_once)).write_to(Sinks.list("ids"))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
    try:
        results = run_with_spark(spark, pipeline, members=2)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    ids = [row[0] for row in results["ids"]]
    assert sorted(ids) == list(range(40_000))
    assert SourceEndpoint.dropped_rows_total - before >= 4096  # the retry re-sent rows: dropped


def test_a_missing_input_path_fails_the_job_with_sparks_message(spark, tmp_path):
    missing = str(tmp_path / "nowhere.parquet")
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", missing)).write_to(Sinks.list("out"))
    with pytest.raises(JobFailedError) as failure:
        run_with_spark(spark, pipeline, members=2)
    text = str(failure.value) + str(getattr(failure.value, "traceback_text", ""))
    assert "PATH_NOT_FOUND" in text and "nowhere.parquet" in text


def test_a_sink_spark_cannot_write_fails_the_job_with_sparks_message(spark, tmp_path):
    """The output path exists and the mode refuses that: the job fails, its sink does not wait."""
    taken = tmp_path / "taken.parquet"
    spark.range(3).write.parquet(str(taken))
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.items([(i, i) for i in range(100_000)]))
     .write_to(Sinks.spark("parquet", str(taken), mode="errorifexists", schema="a long, b long")))
    with pytest.raises(JobFailedError) as failure:
        run_with_spark(spark, pipeline, members=2)
    text = str(failure.value) + str(getattr(failure.value, "traceback_text", ""))
    assert "the Spark side of" in text and "already exists" in text.lower()


@pytest.mark.parametrize("options, message", [
    ({}, "option 'job'"),
    ({"job": "j"}, "option 'vertex'"),
    ({"job": "j", "vertex": "v"}, "option 'members'"),
    ({"job": "j", "vertex": "v", "members": "localhost:1"}, "option 'token'"),
    ({"job": "j", "vertex": "v", "members": "no-port", "token": "t"}, "expected host:port"),
    ({"job": "j", "vertex": "v", "members": "localhost:1", "token": "t", "chunk_rows": "-3"},
     "option 'chunk_rows'"),
    ({"job": "j", "vertex": "v", "members": "localhost:1", "token_file": "/no/such/token"},
     "option 'token_file'"),
])
def test_bad_options_fail_before_any_task_runs(spark, options, message):
    group = f"bad-options-{abs(hash(message))}"
    spark.sparkContext.setJobGroup(group, "bad options")
    started = time.monotonic()
    with pytest.raises(Exception) as write_error:
        spark.range(10).write.format("jet").options(**options).mode("append").save()
    with pytest.raises(Exception) as read_error:
        spark.read.format("jet").options(**options).load()
    assert message in str(write_error.value) and message in str(read_error.value)
    assert time.monotonic() - started < 10
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == []


def test_writing_to_a_job_that_does_not_run_fails_clearly(spark, tmp_path):
    from tests.spark.harness import GrpcCluster

    cluster = GrpcCluster(1)
    try:
        with pytest.raises(Exception) as error:
            (spark.range(10).write.format("jet").mode("append")
             .options(job=JOB_ID, vertex="nope", members=cluster.addresses[0], token=TOKEN, ready_timeout="1")
             .save())
        assert "no running Spark source vertex 'nope'" in str(error.value)
    finally:
        cluster.close()
