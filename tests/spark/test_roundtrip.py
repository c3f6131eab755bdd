"""Round trips: Spark -> Jet -> Spark against Spark's own result on the same data."""

from __future__ import annotations

import pytest

from jet.connectors import Sinks, Sources
from jet.pipeline import Pipeline
from jet.pipeline.aggregate_operations import AggregateOperations

from tests.spark.harness import run_with_spark


def test_items_in_through_spark_and_out_to_a_list(spark, tmp_path):
    path = str(tmp_path / "in.parquet")
    spark.range(0, 5000, numPartitions=3).selectExpr("id", "id * 2 as twice").write.parquet(path)
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", path)).write_to(Sinks.list("out"))
    results = run_with_spark(spark, pipeline, members=2)
    assert sorted(results["out"]) == [(i, 2 * i) for i in range(5000)]
