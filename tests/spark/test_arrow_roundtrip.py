"""Every Spark SQL type through Spark -> Jet -> Spark over the Arrow wire format, against
Spark's own ``collect()`` of the same data; and the sink's schema errors."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from jet.connectors import Sinks, Sources
from jet.pipeline import Pipeline

from tests.spark.harness import run_with_spark

SCHEMA = ("id long, i int, s short, b byte, d double, f float, flag boolean, text string, raw binary, "
          "amount decimal(10,2), day date, at timestamp, local timestamp_ntz, longs array<long>, "
          "scores map<string,long>, point struct<x:long,label:string>")


def _data(count: int) -> list[tuple]:
    rows = []
    for n in range(count):
        rows.append((n, n - 50, n % 300, n % 100 - 50, n / 3, n / 4, n % 2 == 0, f"text {n}", bytes([n % 256, 7]),
                     decimal.Decimal(n) / 100, datetime.date(2024, 1, 1) + datetime.timedelta(days=n),
                     datetime.datetime(2024, 1, 1, 12) + datetime.timedelta(seconds=n * 61),
                     datetime.datetime(2023, 6, 1) + datetime.timedelta(minutes=n),
                     [n, n * 2], {"a": n, "b": -n}, (n * 10, f"p{n}")))
    rows.append((count,) + (None,) * 15)  # a row of nulls
    return rows


def _comparable(value):
    """A value as Spark's collect() and the job's items (pyarrow's to_pylist) can both be
    compared: structs as dicts, maps as sorted pairs, timestamps as instants."""
    if hasattr(value, "asDict"):
        return {key: _comparable(inner) for key, inner in value.asDict().items()}
    if isinstance(value, dict):
        return {key: _comparable(inner) for key, inner in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], tuple):  # a map's pairs
        return {key: _comparable(inner) for key, inner in value}
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.timestamp()
    return value


def test_every_type_goes_through_the_job_as_spark_reads_it(spark, tmp_path):
    source, out = str(tmp_path / "in.parquet"), str(tmp_path / "out.parquet")
    frame = spark.createDataFrame(_data(300), SCHEMA)
    frame.repartition(3).write.parquet(source)
    pipeline = Pipeline.create()
    rows = pipeline.read_from(Sources.spark("parquet", source))
    rows.write_to(Sinks.list("items"))
    rows.write_to(Sinks.spark("parquet", out, schema=frame.schema))
    results = run_with_spark(spark, pipeline, members=2)
    expected = sorted(spark.read.parquet(source).collect(), key=lambda row: row[0])
    # Spark -> Jet -> Spark: what Spark reads back is what it wrote
    assert sorted(spark.read.parquet(out).collect(), key=lambda row: row[0]) == expected
    # Spark -> Jet: the items, column by column (timestamps: the same instant)
    items = sorted(results["items"], key=lambda item: item[0])
    assert len(items) == len(expected)
    local_at = [row["at"].timestamp() if row["at"] else None for row in expected]
    assert [item[11].timestamp() if item[11] else None for item in items] == local_at
    for item, row in zip(items, expected):
        assert [_comparable(v) for i, v in enumerate(item) if i != 11] == \
               [_comparable(v) for i, v in enumerate(row) if i != 11]


def test_dict_rows_are_the_columns_by_name(spark, tmp_path):
    source = str(tmp_path / "in.parquet")
    spark.createDataFrame([(n, f"w{n}", n / 2) for n in range(2000)], "n long, word string, half double") \
        .repartition(2).write.parquet(source)
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", source, as_dicts=True)).write_to(Sinks.list("out"))
    results = run_with_spark(spark, pipeline, members=2)
    expected = sorted((row.asDict() for row in spark.read.parquet(source).collect()), key=lambda row: row["n"])
    assert sorted(results["out"], key=lambda row: row["n"]) == expected


def test_record_batch_items_and_rows_reach_spark_together(spark, tmp_path):
    out = str(tmp_path / "out.parquet")
    batch = pa.RecordBatch.from_pydict({"n": pa.array(range(100, 150), pa.int64()),
                                        "word": pa.array([f"b{n}" for n in range(100, 150)])})
    items = [(n, f"r{n}") for n in range(100)] + [batch] + [{"word": "d", "n": 999}]
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.items(items)).write_to(Sinks.spark("parquet", out, schema="n long, word string"))
    run_with_spark(spark, pipeline, members=2)
    expected = [(n, f"r{n}") for n in range(100)] + [(n, f"b{n}") for n in range(100, 150)] + [(999, "d")]
    assert sorted(tuple(row) for row in spark.read.parquet(out).collect()) == sorted(expected)


def test_an_item_that_does_not_fit_the_sink_schema_fails_naming_column_type_and_value(
        spark, tmp_path, forget_failed_jobs):
    out = str(tmp_path / "out.parquet")
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.items([(1, 2), (2, "three")])).write_to(
        Sinks.spark("parquet", out, schema="a long, b long"))
    with pytest.raises(Exception) as failure:
        run_with_spark(spark, pipeline, members=1, timeout=90)
    message = str(failure.value)
    assert "column 'b'" in message and "int64" in message and "'three'" in message, message
