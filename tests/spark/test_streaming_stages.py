"""Spark stream stages without Spark: arguments, preflight checks, the stream sink's buffer."""

from __future__ import annotations

import random

import pytest
from jet import Pipeline, Sinks, Sources
from jet.connectors.spark.hub import VertexEndpoints
from jet.connectors.spark.stream_endpoints import StreamSinkEndpoint
from jet.connectors.spark.streaming_sink import SparkStreamWriteSpec
from jet.connectors.spark.streaming_source import SparkStreamReadSpec
from jet.spark.job_stages import spark_stages


def test_stream_stages_carry_the_spark_sides_recipe(tmp_path):
    source = Sources.spark_stream("csv", str(tmp_path), schema="a long", header=True, maxFilesPerTrigger=2,
                                  available_now=True)
    sink = Sinks.spark_stream("parquet", str(tmp_path / "out"), str(tmp_path / "cp"), output_mode="append",
                              partition_by="a", compression="snappy")
    assert source.spec == SparkStreamReadSpec("csv", str(tmp_path), {"header": "true", "maxFilesPerTrigger": "2"},
                                              "a long", "tuple", True, None)
    assert sink.spec == SparkStreamWriteSpec("parquet", str(tmp_path / "out"), str(tmp_path / "cp"),
                                             {"compression": "snappy"}, "append", ("a",))
    assert not source.native_timestamps
    p = Pipeline.create()
    p.read_from(source).with_ingestion_timestamps().write_to(sink)
    sources, sinks = spark_stages(p)
    assert [spec for _, spec in sources] == [source.spec] and [spec for _, spec in sinks] == [sink.spec]


@pytest.mark.parametrize("make, message", [
    (lambda: Sources.spark_stream(""), "format must be a Spark format name"),
    (lambda: Sources.spark_stream("csv", option={"a": 1}), "option 'option' must be a string, number or bool"),
    (lambda: Sinks.spark_stream("parquet", "out", output_mode="overwrite"), "output_mode must be one of"),
    (lambda: Sinks.spark_stream("parquet", "out", trigger_interval_ms=0), "trigger_interval_ms must be an int"),
])
def test_bad_arguments_are_refused_naming_them(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_preflight_refuses_a_missing_input_and_an_output_of_another_query(tmp_path):
    with pytest.raises(FileNotFoundError, match="Sources.spark_stream: no file or directory matches"):
        Sources.spark_stream("json", str(tmp_path / "missing")).preflight()
    (tmp_path / "out" / "_spark_metadata").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="holds the output of an earlier streaming query"):
        Sinks.spark_stream("parquet", str(tmp_path / "out")).preflight()
    Sinks.spark_stream("parquet", str(tmp_path / "out"), str(tmp_path / "cp")).preflight()  # resuming: fine


def test_the_stream_sink_buffer_serves_any_uncommitted_range_until_it_is_trimmed():
    endpoint = StreamSinkEndpoint(VertexEndpoints((0, "job", "sink"), "stream-sink", 1), 0, capacity_items=50)
    rng = random.Random(5)
    items: list[int] = []  # the oracle: everything added, by position
    committed = 0
    while len(items) < 400:
        if not endpoint.is_full():
            chunk = list(range(len(items), len(items) + rng.randint(1, 17)))
            endpoint.add(chunk)
            items.extend(chunk)
        start = rng.randint(committed, len(items))
        end = rng.randint(start, len(items))
        assert endpoint.fetch(start, end, 10) == items[start:min(end, start + 10)]
        if rng.random() < 0.4:
            committed = rng.randint(committed, len(items))
            endpoint.trim(committed)
        assert endpoint.is_full() == (len(items) - committed >= 50)
    with pytest.raises(ValueError, match="are not buffered"):
        endpoint.fetch(committed - 1, committed, 5)
    endpoint.finish_input()
    endpoint.trim(len(items))
    assert not endpoint.finished  # no Spark reader has seen it yet
    assert endpoint.state() == [len(items), len(items), True, 50]
    assert endpoint.finished


def test_window_results_name_their_columns_when_a_sink_infers_its_schema():
    from jet import KeyedWindowResult
    from jet.connectors.spark.schema import infer_schema

    schema = infer_schema([KeyedWindowResult(0, 1000, "k", 3, False)])
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("start", "bigint"), ("end", "bigint"), ("key", "string"), ("result", "bigint"), ("is_early", "boolean")]
