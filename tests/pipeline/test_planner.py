"""Planner shapes by their DOT, preserve-order, and pipelines rejected at submission."""

import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, Sources
from jet.pipeline import PipelineDefinitionError

from tests.pipeline.support import run_pipeline


def _edges(dot):
    return [line.strip() for line in dot.splitlines() if "->" in line]


def test_consecutive_stateless_stages_fuse_and_group_by_is_two_stage():
    p = Pipeline.create()
    (p.read_from(Sources.items(["a b"])).flat_map(str.split).filter(bool).map(str.upper)
     .grouping_key(lambda w: w).aggregate(A.counting()).write_to(Sinks.logger()))
    assert _edges(p.to_dag(2).to_dot(2)) == [
        '"items" -> "fused(flat-map, filter, map)" [queueSize=16384];',
        '"fused(flat-map, filter, map)" -> "group-and-aggregate-prepare" [label="partitioned", queueSize=16384];',
        '"group-and-aggregate-prepare" -> "group-and-aggregate" [label="distributed-partitioned", queueSize=16384];',
        '"group-and-aggregate" -> "logger" [queueSize=16384];',
    ]
    assert "subgraph cluster_0 {" in p.to_dag(2).to_dot(2)


def test_fusion_stops_at_a_fork_a_rebalance_and_a_parallelism_change():
    p = Pipeline.create()
    mapped = p.read_from(Sources.items([1])).map(abs)
    mapped.map(str).write_to(Sinks.noop())
    mapped.filter(bool).rebalance().map(int).write_to(Sinks.logger())
    mapped.peek().map(float).set_local_parallelism(3).write_to(Sinks.list())
    assert _edges(p.to_dag(2).to_dot(2)) == [
        '"items" -> "map" [queueSize=16384];',
        '"map" -> "map-2" [taillabel=0, queueSize=16384];',
        '"map" -> "filter" [taillabel=1, queueSize=16384];',
        '"map" -> "peek" [taillabel=2, queueSize=16384];',
        '"map-2" -> "noop" [queueSize=16384];',
        '"filter" -> "map-3" [label="distributed", queueSize=16384];',
        '"peek" -> "map-4" [queueSize=16384];',
        '"map-3" -> "logger" [queueSize=16384];',
        '"map-4" -> "list(default)" [queueSize=16384];',
    ]


def test_global_aggregate_is_prepare_then_one_combiner_over_all_to_one():
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2])).aggregate(A.summing()).write_to(Sinks.list())
    dag = p.to_dag(2)
    assert dag.get_vertex("aggregate").local_parallelism == 1
    assert '"aggregate-prepare" -> "aggregate" [label="distributed-partitioned", queueSize=16384];' in _edges(dag.to_dot(2))
    (edge,) = [e for e in dag.edges if e.dest_name == "aggregate"]
    assert edge.all_to_one_key == "aggregate"


def test_hash_join_broadcasts_the_lookup_side_over_a_higher_priority_edge():
    p = Pipeline.create()
    lookup = p.read_from(Sources.items([("k", 1)])).set_name("lookup")
    p.read_from(Sources.items(["k"])).hash_join(lookup, lambda x: x, lambda y: y[0], lambda x, y: y) \
        .write_to(Sinks.list())
    dag = p.to_dag(2)
    edges = _edges(dag.to_dot(2))
    assert '"lookup" -> "hash-join-collector" [label="distributed-broadcast", queueSize=16384];' in edges
    assert '"hash-join-collector" -> "hash-join-joiner" [label="broadcast", headlabel=1, queueSize=16384];' in edges
    (into_joiner,) = [e for e in dag.edges if e.source_name == "hash-join-collector"]
    assert into_joiner.get_priority() == -1
    assert dag.get_vertex("hash-join-collector").local_parallelism == 1


def test_preserve_order_isolates_unkeyed_edges_and_caps_parallelism():
    p = Pipeline.create().set_preserve_order(True)
    p.read_from(Sources.items(range(10))).map(abs).set_local_parallelism(4).write_to(Sinks.list())
    dag = p.to_dag(4)
    assert dag.get_vertex("map").local_parallelism == 1
    assert '"items" -> "map" [label="isolated", queueSize=16384];' in _edges(dag.to_dot(4))
    assert p.to_dot() == 'digraph Pipeline {\n\t"items" -> "map";\n\t"map" -> "list(default)";\n}'


@pytest.mark.parametrize("members", [1, 3])
def test_preserve_order_keeps_the_source_order_per_source_partition(members):
    items = list(range(20_000))
    p = Pipeline.create().set_preserve_order(True)
    p.read_from(Sources.items(items)).map(lambda x: x * 2).filter(lambda x: x % 3) \
        .write_to(Sinks.list())
    results = run_pipeline(p, members)["default"]
    # Sources.items gives processor g of N the items g, g+N, ...: that is a source partition
    for g in range(members):
        expected = [x * 2 for x in items[g::members] if (x * 2) % 3]
        got = [y for y in results if (y // 2) % members == g]
        assert got == expected


def test_a_pipeline_without_a_sink_is_rejected():
    p = Pipeline.create()
    p.read_from(Sources.items([1])).map(abs)
    with pytest.raises(PipelineDefinitionError, match="no sink"):
        p.to_dag()


def test_a_dangling_stage_is_named():
    p = Pipeline.create()
    source = p.read_from(Sources.items([1]))
    source.write_to(Sinks.noop())
    source.map(abs).set_name("forgotten")
    with pytest.raises(PipelineDefinitionError, match="stage 'forgotten' leads nowhere"):
        p.to_dag()


def test_a_stage_of_another_pipeline_or_itself_is_rejected():
    p, q = Pipeline.create(), Pipeline.create()
    mine, theirs = p.read_from(Sources.items([1])), q.read_from(Sources.items([2]))
    with pytest.raises(PipelineDefinitionError, match="stage 'items' of another pipeline"):
        mine.merge(theirs)
    with pytest.raises(PipelineDefinitionError, match="hash_join with itself"):
        mine.hash_join(mine, abs, abs, max)


def test_a_non_callable_and_an_unknown_aggregate_are_named():
    p = Pipeline.create()
    stage = p.read_from(Sources.items([1]))
    with pytest.raises(PipelineDefinitionError, match="stage 'map': the mapping function must be callable"):
        stage.map("upper")
    with pytest.raises(PipelineDefinitionError, match="stage 'group-and-aggregate': expected an AggregateOperation"):
        stage.grouping_key(abs).aggregate("count")
    with pytest.raises(PipelineDefinitionError, match="expected an AggregateOperation"):
        stage.aggregate(len)
    with pytest.raises(PipelineDefinitionError, match="write_to needs a sink"):
        stage.write_to([])


def test_a_source_that_cannot_be_opened_fails_before_the_job_starts(tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "missing-*.txt"))).write_to(Sinks.list())
    with pytest.raises(FileNotFoundError, match="Sources.files: no file matches .*missing-"):
        p.preflight()


def test_identity_grouping_lambdas_skip_the_per_item_call():
    from jet.core.functions import as_key_fn, whole_item
    assert as_key_fn(lambda w: w) is whole_item
    assert as_key_fn(lambda w: w[0]) is not whole_item
    offset = 1
    assert as_key_fn(lambda w, o=offset: w) is not whole_item
