"""`jet.local_cluster` runs a job's Spark side for it (the local runner), with real members."""

from __future__ import annotations

import jet
from jet.connectors import Sinks, Sources
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
