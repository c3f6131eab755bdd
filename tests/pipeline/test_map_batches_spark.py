"""Spark parquet -> map_batches -> Spark parquet through a real SparkSession, against PySpark's
own result over the same data."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, Sources

pytest.importorskip("pyspark")

from tests.spark.conftest import spark  # noqa: E402,F401 - the shared SparkSession fixture
from tests.spark.harness import run_with_spark  # noqa: E402


def _rows(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def partial_sums(batch: pa.RecordBatch) -> pa.Table:
    """Per batch: the sum and count of each key's values. The columns are taken by position:
    rows of tuples (before the Arrow wire format) come as columns _1, _2."""
    named = batch.rename_columns(["key", "value"])
    return pa.Table.from_batches([named]).group_by("key").aggregate([("value", "sum"), ("value", "count")])


def test_parquet_through_map_batches_to_parquet_matches_spark(spark, tmp_path):
    source, out = str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    spark.range(0, 20000, numPartitions=3).selectExpr("concat('k', id % 17) as key", "id as value") \
        .write.parquet(source)

    def scaled(batch: pa.RecordBatch) -> pa.RecordBatch:
        keep = pc.not_equal(pc.bit_wise_and(batch.column("value"), 3), 0)
        kept = batch.filter(keep)
        return pa.RecordBatch.from_arrays([kept.column("key"), pc.multiply(kept.column("value"), 3)],
                                          names=["key", "tripled"])

    pipeline = Pipeline.create()
    # as_dicts: Spark's column names whether the source sends batches or rows
    (pipeline.read_from(Sources.spark("parquet", source, as_dicts=True)).map_batches(scaled)
     .write_to(Sinks.spark("parquet", out, schema="key string, tripled long")))
    run_with_spark(spark, pipeline, members=2)
    expected = spark.read.parquet(source).where("value % 4 != 0").selectExpr("key", "value * 3 as tripled")
    assert _rows(spark.read.parquet(out)) == _rows(expected)


def test_partial_group_by_in_map_batches_then_grouping_matches_spark(spark, tmp_path):
    source, out = str(tmp_path / "in.parquet"), str(tmp_path / "sums.parquet")
    spark.range(0, 30000, numPartitions=4).selectExpr("concat('k', id % 23) as key", "id % 101 as value") \
        .write.parquet(source)
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("parquet", source)).map_batches(partial_sums)
     .grouping_key(lambda row: row[0])
     .aggregate(A.all_of(A.summing(lambda row: row[1]), A.summing(lambda row: row[2])))
     .map(lambda entry: (entry[0], entry[1][0], entry[1][1]))
     .write_to(Sinks.spark("parquet", out, schema="key string, total long, rows long")))
    run_with_spark(spark, pipeline, members=2)
    expected = spark.sql(f"SELECT key, sum(value) AS total, count(*) AS rows FROM parquet.`{source}` GROUP BY key")
    assert _rows(spark.read.parquet(out)) == _rows(expected)


def test_map_batches_takes_spark_batches_joined_into_frames_of_up_to_65536_rows(spark, tmp_path):
    source = str(tmp_path / "in.parquet")
    spark.range(0, 50_000, numPartitions=1).selectExpr("id").write.parquet(source)

    def sizes(batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([pa.array([batch.num_rows]), pa.array([pc.sum(batch.column(0)).as_py()])],
                                          names=["rows", "total"])

    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", source)).map_batches(sizes).write_to(Sinks.list("sizes"))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")  # Spark sends 1,000-row batches
    try:
        results = run_with_spark(spark, pipeline, members=2)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    calls = results["sizes"]
    assert sum(rows for rows, _ in calls) == 50_000 and sum(total for _, total in calls) == sum(range(50_000))
    assert max(rows for rows, _ in calls) > 1000  # Spark's batches arrived joined, not one call each
    assert len(calls) < 50
