"""Spark's batches folded whole by a grouped aggregation (jet.core.batch_fold), end to end through
a real SparkSession, against Spark's own SQL and plain Python over the same Parquet files."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest

import jet
from jet import AggregateOperations as A, Pipeline, Sinks, Sources
from jet.execution.errors import JobFailedError

pytest.importorskip("pyspark")

from tests.spark.conftest import spark  # noqa: E402,F401 - the shared SparkSession fixture
from tests.spark.harness import run_with_spark  # noqa: E402


def test_grouped_sums_counts_and_means_on_member_processes_match_spark_sql(spark, tmp_path):
    source, out = str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    spark.range(0, 60_000, numPartitions=4).selectExpr(
        "concat('k', id % 37) AS key", "id % 1001 - 500 AS amount", "CAST(id % 97 AS DOUBLE) / 7 AS price") \
        .write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source))
     .grouping_key(lambda row: row[0])
     .aggregate(A.all_of(A.summing(lambda row: row[1]), A.counting(), A.averaging(lambda row: row[2])))
     .map(lambda entry: (entry[0], *entry[1]))
     .write_to(Sinks.spark("parquet", out, schema="key string, total long, rows long, mean double")))
    assert pipeline.to_dag(1).get_vertex(f"spark-parquet({source})").processor_supplier.columnar
    with jet.local_cluster(members=2) as cluster:
        cluster.new_job(pipeline).join(timeout=240)
    expected = {row[0]: tuple(row[1:]) for row in spark.sql(
        f"SELECT key, sum(amount), count(*), avg(price) FROM parquet.`{source}` GROUP BY key").collect()}
    got = {row[0]: tuple(row[1:]) for row in spark.read.parquet(out).collect()}
    assert set(got) == set(expected) and len(got) == 37
    for key, (total, rows, mean) in got.items():
        assert (total, rows) == expected[key][:2]
        assert math.isclose(mean, expected[key][2], rel_tol=1e-12)


def test_computed_values_of_batches_match_spark_sql(spark, tmp_path):
    """A value computed by a Python function per row, summed and averaged in Arrow."""
    source = str(tmp_path / "computed.parquet")
    spark.range(0, 20_000, numPartitions=2).selectExpr(
        "id % 13 AS key", "id % 101 AS amount", "CAST(id % 89 AS DOUBLE) / 3 AS price").write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source))
     .grouping_key(lambda row: row[0])
     .aggregate(A.all_of(A.summing(lambda row: row[1] * 2 + 1), A.averaging(lambda row: row[2] * 1.5)))
     .write_to(Sinks.list("groups")))
    assert pipeline.to_dag(1).get_vertex(f"spark-parquet({source})").processor_supplier.columnar
    got = dict(run_with_spark(spark, pipeline, members=2)["groups"])
    expected = {row[0]: tuple(row[1:]) for row in spark.sql(
        f"SELECT key, sum(amount * 2 + 1), avg(price * 1.5) FROM parquet.`{source}` GROUP BY key").collect()}
    assert set(got) == set(expected) and len(got) == 13
    for key, (total, mean) in got.items():
        assert total == expected[key][0] and type(total) is int
        assert math.isclose(mean, expected[key][1], rel_tol=1e-12)


def _python_sums(path: str, key: str, value: str) -> dict:
    table = pq.read_table(path)
    sums: dict = {}
    for k, v in zip(table.column(key).to_pylist(), table.column(value).to_pylist()):
        sums[k] = sums.get(k, 0) + v
    return sums


def test_dict_rows_and_sums_beyond_int64_are_pythons_exact_sums(spark, tmp_path):
    """Values near 2**62: the batches whose sums could leave int64 are folded as rows, so the
    results are Python's exact integers (Spark's own sum(long) would overflow)."""
    source = str(tmp_path / "big.parquet")
    spark.range(0, 3000, numPartitions=3).selectExpr(
        "id % 5 AS user", "CASE WHEN id % 2 = 0 THEN 4611686018427387904 + id ELSE id END AS amount") \
        .write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source, as_dicts=True))
     .grouping_key(lambda row: row["user"]).aggregate(A.summing(lambda row: row["amount"]))
     .write_to(Sinks.list("sums")))
    assert dict(run_with_spark(spark, pipeline, members=2)["sums"]) == _python_sums(source, "user", "amount")


def test_a_null_value_fails_the_job_as_the_rows_would(spark, tmp_path):
    source = str(tmp_path / "nulls.parquet")
    spark.range(0, 100, numPartitions=1).selectExpr(
        "id % 3 AS key", "CASE WHEN id = 42 THEN NULL ELSE id END AS value").write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source))
     .grouping_key(lambda row: row[0]).aggregate(A.summing(lambda row: row[1]))
     .write_to(Sinks.list("sums")))
    with pytest.raises(JobFailedError, match="unsupported operand type.*NoneType"):
        run_with_spark(spark, pipeline, members=2)


def test_a_getter_of_a_column_the_rows_do_not_have_fails_the_job_with_the_users_error(spark, tmp_path):
    source = str(tmp_path / "narrow.parquet")
    spark.range(0, 50, numPartitions=1).selectExpr("id % 3 AS key", "id AS value").write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source))
     .grouping_key(lambda row: row[0]).aggregate(A.summing(lambda row: row[5]))
     .write_to(Sinks.list("sums")))
    with pytest.raises(JobFailedError, match="IndexError: tuple index out of range") as failure:
        run_with_spark(spark, pipeline, members=2)
    assert "lambda row: row[5]" in str(failure.value)  # the user's own frame, with its line
