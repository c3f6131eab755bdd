"""Spark Structured Streaming on both sides of a job, at the DAG level: a source vertex fed by
a Spark streaming query, a sink vertex read by one. Oracles: the rows the test wrote, in plain
Python."""

from __future__ import annotations

import csv
import os
import threading
import time
from pathlib import Path

from jet.connectors.spark.streaming_sink import spark_stream_sink
from jet.connectors.spark.streaming_source import spark_stream_source
from jet.core.dag import DAG
from jet.core.edge import Edge
from jet.core.processors import items_source_p, list_sink_p, map_p
from jet.spark.stream_side import end_spark_streams

from tests.spark.harness import JOB_ID, TOKEN, GrpcCluster

CSV_SCHEMA = "key string, ts long, value long"


def run_dag_with_spark(spark, make_dag, members: int = 2, timeout: float = 240, also=None) -> None:
    """Run ``make_dag()`` on in-process members while the Spark side of its Spark vertices runs
    in a thread; ``also()`` starts with it (e.g. a thread writing files). Raises either side's error."""
    from jet.spark.runner import run_spark_side

    cluster = GrpcCluster(members)
    errors: list[BaseException] = []

    def side() -> None:
        try:
            run_spark_side(spark, make_dag(), cluster.addresses, TOKEN, JOB_ID, ready_timeout_s=60)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    thread = threading.Thread(target=side, daemon=True)

    def built(_plans) -> None:
        thread.start()
        if also is not None:
            also()

    try:
        cluster.run(make_dag, timeout=timeout, on_built=built)
        thread.join(timeout)
        assert not thread.is_alive(), "the Spark side did not stop after the job completed"
        if errors:
            raise errors[0]
    finally:
        cluster.close()


def write_csv_file(directory: Path, name: str, rows: list[tuple]) -> None:
    """Write a CSV file atomically (Spark's file source skips names starting with a dot)."""
    hidden = directory / f".{name}.tmp"
    with open(hidden, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    os.rename(hidden, directory / name)


def file_rows(index: int, count: int) -> list[tuple]:
    return [(f"k{(index * 7 + i) % 5}", 1_700_000_000_000 + index * 1000 + i, index * 10_000 + i)
            for i in range(count)]


def feed_files_then_end(directory: Path, batches: list[list[tuple]], pause_s: float = 0.3) -> threading.Thread:
    """Write one file per batch (the first is already there), then end the stream."""
    def run() -> None:
        for index, rows in enumerate(batches[1:], start=1):
            time.sleep(pause_s)
            write_csv_file(directory, f"part-{index:03d}.csv", rows)
        end_spark_streams(JOB_ID)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_files_appearing_over_time_reach_the_job_exactly_once(spark, tmp_path):
    directory = tmp_path / "in"
    directory.mkdir()
    batches = [file_rows(index, 200 + 37 * index) for index in range(5)]
    write_csv_file(directory, "part-000.csv", batches[0])
    source = spark_stream_source("csv", str(directory), schema=CSV_SCHEMA, maxFilesPerTrigger=1)
    received: list = []

    def make_dag() -> DAG:
        dag = DAG()
        spark_vertex = dag.new_vertex(source.name, source.supplier, 1)
        sink = dag.new_vertex("sink", list_sink_p(received), 1)
        dag.edge(Edge.between(spark_vertex, sink))
        return dag

    run_dag_with_spark(spark, make_dag, also=lambda: feed_files_then_end(directory, batches))
    assert sorted(received) == sorted(row for rows in batches for row in rows)


def test_a_sink_vertex_read_by_a_spark_stream_writes_every_item_once(spark, tmp_path):
    out, checkpoint = str(tmp_path / "out.parquet"), str(tmp_path / "checkpoint")
    items = [(i, i * i % 1009, f"item-{i}") for i in range(20_000)]
    # a buffer much smaller than the data: the sink stops taking input until Spark commits
    sink = spark_stream_sink("parquet", out, checkpoint, schema="id long, square long, name string",
                             buffer_items=1500)

    def make_dag() -> DAG:
        dag = DAG()
        source = dag.new_vertex("items", items_source_p(items), 1)
        spark_vertex = dag.new_vertex(sink.name, sink.supplier, 1)
        dag.edge(Edge.between(source, spark_vertex))
        return dag

    run_dag_with_spark(spark, make_dag)
    assert sorted(tuple(row) for row in spark.read.parquet(out).collect()) == items


def test_stream_in_map_stream_out(spark, tmp_path):
    directory, out = tmp_path / "in", str(tmp_path / "out.parquet")
    directory.mkdir()
    batches = [file_rows(index, 150) for index in range(4)]
    write_csv_file(directory, "part-000.csv", batches[0])
    source = spark_stream_source("csv", str(directory), schema=CSV_SCHEMA, as_dicts=True, maxFilesPerTrigger=2)
    sink = spark_stream_sink("parquet", out, str(tmp_path / "checkpoint"))  # schema inferred from the items

    def make_dag() -> DAG:
        dag = DAG()
        spark_in = dag.new_vertex(source.name, source.supplier, 1)
        double = dag.new_vertex("double", map_p(lambda row: (row["key"], row["value"] * 2)), 1)
        spark_out = dag.new_vertex(sink.name, sink.supplier, 1)
        dag.edge(Edge.between(spark_in, double)).edge(Edge.between(double, spark_out))
        return dag

    run_dag_with_spark(spark, make_dag, also=lambda: feed_files_then_end(directory, batches))
    expected = sorted((key, value * 2) for rows in batches for key, _, value in rows)
    assert sorted(tuple(row) for row in spark.read.parquet(out).collect()) == expected


def test_a_stream_sink_without_items_completes_once_spark_has_seen_it(spark, tmp_path):
    out = str(tmp_path / "out.parquet")
    sink = spark_stream_sink("parquet", out, str(tmp_path / "checkpoint"), schema="id long")

    def make_dag() -> DAG:
        dag = DAG()
        source = dag.new_vertex("items", items_source_p([]), 1)
        spark_vertex = dag.new_vertex(sink.name, sink.supplier, 1)
        dag.edge(Edge.between(source, spark_vertex))
        return dag

    run_dag_with_spark(spark, make_dag)  # the Spark side finds the vertex, then sees it end
    assert spark.read.schema("id long").parquet(out).count() == 0
