"""A stream pipeline through Spark Structured Streaming on both sides: CSV files appear in a
directory over time, a 1 s tumbling window counts per key, Parquet comes out; it must equal
what PySpark alone computes over the same files (a batch read and a group-by)."""

from __future__ import annotations

import runpy
from pathlib import Path

import jet
from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

from tests.spark.harness import run_with_spark
from tests.spark.test_streaming_dag import CSV_SCHEMA, feed_files_then_end, file_rows, write_csv_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_streaming.py"
OUT_SCHEMA = "key string, window_start long, window_end long, count long"


def _spark_window_counts(spark, directory) -> list[tuple]:
    """The oracle: PySpark's batch read of the same files, counted per key and 1 s window."""
    frame = spark.read.schema(CSV_SCHEMA).csv(str(directory))
    counts = (frame.selectExpr("key", "(ts div 1000) * 1000 AS window_start")
              .groupBy("key", "window_start").count().collect())
    return sorted((row["key"], row["window_start"], row["window_start"] + 1000, row["count"]) for row in counts)


def _pipeline(directory, out, checkpoint) -> Pipeline:
    p = Pipeline.create()
    (p.read_from(Sources.spark_stream("csv", str(directory), schema=CSV_SCHEMA, maxFilesPerTrigger=1))
     .with_timestamps(lambda row: row[1], 1500)
     .grouping_key(lambda row: row[0])
     .window(WindowDefinition.tumbling(1000))
     .aggregate(AggregateOperations.counting())
     .map(lambda result: (result.key, result.start, result.end, result.result))
     .write_to(Sinks.spark_stream("parquet", str(out), str(checkpoint), schema=OUT_SCHEMA)))
    return p


def test_files_over_time_windowed_counts_to_parquet_equal_pyspark(spark, tmp_path):
    directory, out = tmp_path / "in", tmp_path / "out.parquet"
    directory.mkdir()
    batches = [file_rows(index, 120 + 40 * index) for index in range(5)]
    write_csv_file(directory, "part-000.csv", batches[0])
    run_with_spark(spark, _pipeline(directory, out, tmp_path / "checkpoint"), members=2, timeout=240,
                   on_built=lambda _plans: feed_files_then_end(directory, batches))
    got = sorted(tuple(row) for row in spark.read.parquet(str(out)).collect())
    assert got == _spark_window_counts(spark, directory)


def test_the_example_on_a_local_cluster(spark, tmp_path):
    """examples/spark_streaming.py under jet.local_cluster: the local runner runs both Spark
    queries and stops them when the job ends (its source reads what is there and ends)."""
    directory, out = tmp_path / "in", tmp_path / "out.parquet"
    directory.mkdir()
    for index in range(3):
        write_csv_file(directory, f"part-{index:03d}.csv", file_rows(index, 200))
    pipeline = runpy.run_path(str(EXAMPLE))["pipeline"](str(directory), str(out), str(tmp_path / "checkpoints"))
    with jet.local_cluster(members=2) as cluster:
        cluster.new_job(pipeline).join(timeout=300)
    got = sorted(tuple(row) for row in spark.read.parquet(str(out)).collect())
    assert got == _spark_window_counts(spark, directory)


def _key_and_doubled_value(batch):
    import pyarrow as pa
    import pyarrow.compute as pc

    return pa.RecordBatch.from_arrays([batch.column(0), pc.multiply(batch.column(2), 2)], names=["key", "doubled"])


def test_map_batches_into_a_spark_stream_sink_writes_every_row(spark, tmp_path):
    """Record batches reach the Spark stream sink as their rows (positions count rows, not batches)."""
    directory, out = tmp_path / "in", tmp_path / "out.parquet"
    directory.mkdir()
    for index in range(3):
        write_csv_file(directory, f"part-{index:03d}.csv", file_rows(index, 300))
    p = Pipeline.create()
    (p.read_from(Sources.spark_stream("csv", str(directory), schema=CSV_SCHEMA, maxFilesPerTrigger=1,
                                      available_now=True))
     .without_timestamps()
     .map_batches(_key_and_doubled_value)
     .write_to(Sinks.spark_stream("parquet", str(out), str(tmp_path / "checkpoint"),
                                  schema="key string, doubled long")))
    with jet.local_cluster(members=2) as cluster:
        cluster.new_job(p).join(timeout=300)
    got = sorted(tuple(row) for row in spark.read.parquet(str(out)).collect())
    oracle = spark.read.schema(CSV_SCHEMA).csv(str(directory)).selectExpr("key", "value * 2 AS doubled")
    assert got == sorted(tuple(row) for row in oracle.collect())
