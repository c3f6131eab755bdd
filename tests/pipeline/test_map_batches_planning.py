"""How map_batches is planned: fused vertices, the Spark source's columnar hand-off, batches or
rows out of a chain, and the pipelines refused at definition."""

from collections import Counter

import pyarrow as pa
import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, Sources
from jet.connectors.spark.stages import SparkSourceSupplier
from jet.core.columnar import rows_to_batch
from jet.core.processors import compile_batch_chain
from jet.core.processors.batches import BatchFunction
from jet.pipeline import PipelineDefinitionError

from tests.pipeline.support import run_pipeline


def identity(batch):
    return batch


def _edges(dag):
    return [line.strip() for line in dag.to_dot(2).splitlines() if "->" in line]


def _spark_source_supplier(dag):
    return dag.get_vertex("spark-parquet(in/)").processor_supplier


def _spark_pipeline(build):
    p = Pipeline.create()
    build(p.read_from(Sources.spark("parquet", "in/")))
    return p.to_dag(2)


def test_map_batches_fuses_with_the_row_stages_before_and_after_it():
    p = Pipeline.create()
    (p.read_from(Sources.items([1])).map(lambda x: (x,)).map_batches(identity).filter(bool)
     .grouping_key(lambda row: row[0]).aggregate(A.counting()).write_to(Sinks.list()))
    assert _edges(p.to_dag(2)) == [
        '"items" -> "fused(map, map-batches, filter)" [queueSize=16384];',
        '"fused(map, map-batches, filter)" -> "group-and-aggregate-prepare" [label="partitioned", queueSize=16384];',
        '"group-and-aggregate-prepare" -> "group-and-aggregate" [label="distributed-partitioned", queueSize=16384];',
        '"group-and-aggregate" -> "list(default)" [queueSize=16384];',
    ]


def test_the_spark_source_emits_batches_when_map_batches_is_its_only_consumer():
    dag = _spark_pipeline(lambda s: s.map_batches(identity).map(str).write_to(Sinks.noop()))
    assert _spark_source_supplier(dag) == SparkSourceSupplier(_spark_source_supplier(dag).spec, columnar=True)
    assert [v.name for v in dag.vertices] == ["spark-parquet(in/)", "fused(map-batches, map)", "noop"]


def test_a_different_parallelism_or_a_round_robin_rebalance_still_gets_batches():
    dag = _spark_pipeline(lambda s: s.rebalance().map_batches(identity).set_local_parallelism(3)
                          .write_to(Sinks.noop()))
    assert _spark_source_supplier(dag).columnar


@pytest.mark.parametrize("build", [
    lambda s: s.map(tuple).map_batches(identity).write_to(Sinks.noop()),  # a row stage first
    lambda s: s.rebalance(lambda row: row[0]).map_batches(identity).write_to(Sinks.noop()),
    lambda s: (s.map_batches(identity).write_to(Sinks.noop()), s.write_to(Sinks.logger())),
    lambda s: s.write_to(Sinks.noop()),
], ids=["row-stage-first", "keyed-rebalance", "second-consumer", "no-map-batches"])
def test_the_spark_source_emits_rows_otherwise(build):
    assert not _spark_source_supplier(_spark_pipeline(build)).columnar


def test_unfused_map_batches_stages_pass_batches_over_the_edge():
    items = [(f"k{i % 5}", i) for i in range(2000)]
    received = []

    def record(batch):
        received.append(batch.schema.names)
        return batch

    def build(p):
        first = p.read_from(Sources.items(items)).map_batches(
            lambda b: b.rename_columns(["key", "value"]))
        first.map_batches(record).set_local_parallelism(1).write_to(Sinks.list("a"))
        first.map_batches(record).set_local_parallelism(1).write_to(Sinks.list("b"))

    p = Pipeline.create()
    build(p)
    assert [v.name for v in p.to_dag(2).vertices] == [
        "items", "map-batches", "map-batches-2", "list(a)", "map-batches-3", "list(b)"]
    results = run_pipeline(p, 1, 2)
    assert Counter(results["a"]) == Counter(items) == Counter(results["b"])
    assert received and all(names == ["key", "value"] for names in received)


def test_a_chain_emits_batches_rows_or_pairs():
    function = BatchFunction(identity, "m")
    batch = rows_to_batch([("a", 1), ("b", 2)])
    assert compile_batch_chain([("map_batches", function)], ["m"], "batches")([batch]) == [batch]
    assert compile_batch_chain([("map_batches", function)], ["m"], "rows")([("a", 1), batch]) == \
        [("a", 1), ("a", 1), ("b", 2)]
    pairs = compile_batch_chain([("map", tuple), ("map_batches", function)], ["t", "m"], "pairs")([("a", 1)])
    assert [item for _, item in pairs] == [("a", 1)]
    with pytest.raises(ValueError, match="ends with a map_batches"):
        compile_batch_chain([("map_batches", function), ("map", str)], ["m", "s"], "batches")


def test_a_stream_without_timestamps_takes_map_batches_before_a_stateful_stage():
    p = Pipeline.create()
    (p.read_from(Sources.item_stream(10)).without_timestamps().map_batches(identity)
     .map_stateful(lambda: [0], lambda state, item: item).write_to(Sinks.noop()))
    names = [v.name for v in p.to_dag(2).vertices]
    # map-batches emits the pairs the stateful stage takes: no map-batches-wrap vertex
    assert names == ["item-stream", "map-batches", "map-stateful-global", "noop",
                     "map-stateful-global-unwrap"]


def test_a_stream_with_timestamps_is_refused():
    p = Pipeline.create()
    stage = p.read_from(Sources.item_stream(10)).with_native_timestamps(0)
    with pytest.raises(PipelineDefinitionError, match="cannot follow a stream with timestamps"):
        stage.map(str).map_batches(identity)


@pytest.mark.parametrize("kwargs, message", [
    ({"format": "polars"}, "format must be 'arrow' or 'pandas', got 'polars'"),
    ({"schema": "a int"}, "schema must be a pyarrow.Schema or None, got str 'a int'"),
    ({"as_dicts": 1}, "as_dicts must be a bool"),
])
def test_bad_arguments_are_refused_naming_the_stage(kwargs, message):
    stage = Pipeline.create().read_from(Sources.items([1]))
    with pytest.raises(PipelineDefinitionError, match=message):
        stage.map_batches(identity, **kwargs)


def test_a_function_is_required():
    with pytest.raises(PipelineDefinitionError, match="the batch function must be callable"):
        Pipeline.create().read_from(Sources.items([1])).map_batches(pa.schema([]))


def test_preserve_order_caps_map_batches_at_the_upstreams_parallelism_and_keeps_the_order():
    items = [(i,) for i in range(5000)]
    p = Pipeline.create().set_preserve_order(True)
    p.read_from(Sources.items(items)).map_batches(identity).set_local_parallelism(4).write_to(Sinks.list())
    assert p.to_dag(2).get_vertex("map-batches").local_parallelism == 1
    assert run_pipeline(p, 1, 2)["default"] == items


def test_waiting_batches_of_one_schema_are_joined_up_to_a_row_limit():
    from jet.core.processors.batches import coalesce

    small = [rows_to_batch([(i, "x")] * 3) for i in range(5)]
    other = rows_to_batch([("a",)])
    joined = coalesce(small[:3] + [other] + small[3:], max_rows=7)
    assert [b.num_rows for b in joined] == [6, 3, 1, 6]
    assert [row for b in joined for row in zip(*b.to_pydict().values())] == \
        [row for b in small[:3] + [other] + small[3:] for row in zip(*b.to_pydict().values())]
    assert coalesce([small[0]]) == [small[0]]
