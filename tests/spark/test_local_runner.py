"""`jet.local_cluster` runs a job's Spark side for it (the local runner), with real members."""

from __future__ import annotations

import logging

import jet
import pytest
from jet.connectors import Sinks, Sources
from jet.execution.errors import JobFailedError
from jet.pipeline import Pipeline
from jet.pipeline.aggregate_operations import AggregateOperations


def test_a_local_cluster_starts_the_spark_side_of_a_job(spark, tmp_path):
    source, out = str(tmp_path / "in.parquet"), str(tmp_path / "sums.parquet")
    spark.range(0, 3000, numPartitions=3).selectExpr("id % 7 AS key", "id AS value").write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source))
     .grouping_key(lambda row: row[0])
     .aggregate(AggregateOperations.summing(lambda row: row[1]))
     .write_to(Sinks.spark("parquet", out)))
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(pipeline)
        job.join(timeout=240)
    expected = {key: sum(v for v in range(3000) if v % 7 == key) for key in range(7)}
    assert {row[0]: row[1] for row in spark.read.parquet(out).collect()} == expected


def parquet_copy(source, out) -> Pipeline:
    """Spark reads ``source`` as Parquet into the job, which hands it to Spark to write ``out``."""
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", str(source))).write_to(Sinks.spark("parquet", str(out)))
    return pipeline


def test_a_spark_session_that_does_not_start_fails_the_job_instead_of_leaving_it_waiting(tmp_path, monkeypatch,
                                                                                        caplog):
    """No Spark session (no JVM, say): the job's Spark vertices are aborted with the reason."""
    from jet.spark import runner

    def no_session(*args, **kwargs):
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(runner, "spark_session", no_session)
    (tmp_path / "in.parquet").mkdir()  # the submission checks that the input exists
    pipeline = parquet_copy(tmp_path / "in.parquet", tmp_path / "out.parquet")
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(pipeline)
        with pytest.raises(JobFailedError, match="the Spark side failed: .*Java gateway process exited"):
            job.join(timeout=120)
        caplog.clear()  # a job already over (as after a stage's own abort) is left alone, quietly
        runner.abort_spark_vertices(pipeline, cluster.addresses, cluster.token, job.id, "again")
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_a_spark_failure_reads_as_sparks_own_message_and_cause(spark, tmp_path):
    """A Py4J error (Parquet reading a CSV file) gives Spark's error and its cause, not Py4J's
    "An error occurred while calling o38.load." nor the JVM stack."""
    from jet.spark.session import spark_failure_message

    (tmp_path / "lines.csv").write_text("line\nhello world\n")
    with pytest.raises(Exception) as caught:
        spark.read.format("parquet").load(str(tmp_path / "lines.csv")).collect()
    message = spark_failure_message(caught.value)
    assert message.startswith("org.apache.spark.SparkException: [FAILED_READ_FILE"), message
    assert "lines.csv is not a Parquet file" in message, message
    assert "An error occurred while calling" not in message and "\tat " not in message, message
    assert "Suppressed:" not in message and " more" not in message.splitlines()[-1], message


def test_a_failing_spark_stage_is_logged_once_and_fails_the_job_with_sparks_message(spark, tmp_path, caplog):
    (tmp_path / "lines.csv").write_text("line\nhello world\n")
    pipeline = parquet_copy(tmp_path / "lines.csv", tmp_path / "out.parquet")
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(pipeline)
        with pytest.raises(JobFailedError, match="lines.csv is not a Parquet file"):
            job.join(timeout=120)
        job._spark_side.join(60)
    errors = [r.getMessage() for r in caplog.records
              if r.name == "jet.spark" and r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("Spark source"), errors


def test_a_spark_message_keeps_its_own_lines_that_begin_with_at():
    from jet.spark.session import spark_failure_message

    error = RuntimeError("An error occurred while calling o7.save.\n: java.lang.IllegalArgumentException: bad"
                         " option\nat least one path is needed\n\tat org.apache.Foo.bar(Foo.java:1)\n\t... 3 more")
    assert spark_failure_message(error) == ("java.lang.IllegalArgumentException: bad option\n"
                                            "at least one path is needed")
