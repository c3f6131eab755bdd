import pytest

from jet.core import DAG, HASH_PARTITIONER, DagValidationError, Edge, EdgeConfig
from jet.core.processors import noop_p


def _dag(*names):
    dag = DAG()
    return dag, [dag.new_vertex(n, noop_p()) for n in names]


def test_duplicate_vertex_name_is_rejected():
    dag, _ = _dag("a")
    with pytest.raises(DagValidationError, match="duplicate vertex name 'a'"):
        dag.new_vertex("a", noop_p())


def test_edge_to_a_vertex_of_another_dag_is_rejected():
    dag, (a,) = _dag("a")
    _, (stranger,) = _dag("b")
    with pytest.raises(DagValidationError, match="destination vertex 'b' is not in this DAG"):
        dag.edge(Edge.between(a, stranger))


def test_edge_without_destination_is_rejected():
    dag, (a,) = _dag("a")
    with pytest.raises(DagValidationError, match="has no destination"):
        dag.edge(Edge.from_(a))


def test_self_loop_is_rejected():
    dag, (a,) = _dag("a")
    with pytest.raises(DagValidationError, match="self-loop on vertex 'a'"):
        dag.edge(Edge.between(a, a))


def test_two_edges_between_the_same_pair_are_rejected():
    dag, (a, b) = _dag("a", "b")
    dag.edge(Edge.between(a, b))
    with pytest.raises(DagValidationError, match="two edges between 'a' and 'b'"):
        dag.edge(Edge.from_(a, 1).to(b, 1))


def test_output_ordinal_used_twice_is_rejected():
    dag, (a, b, c) = _dag("a", "b", "c")
    dag.edge(Edge.between(a, b))
    with pytest.raises(DagValidationError, match="output ordinal 0 of vertex 'a' is already used"):
        dag.edge(Edge.between(a, c))


def test_input_ordinal_used_twice_is_rejected():
    dag, (a, b, c) = _dag("a", "b", "c")
    dag.edge(Edge.between(a, c))
    with pytest.raises(DagValidationError, match="input ordinal 0 of vertex 'c' is already used"):
        dag.edge(Edge.between(b, c))


def test_gap_in_ordinals_is_rejected_by_validate():
    dag, (a, b, c) = _dag("a", "b", "c")
    dag.edge(Edge.between(a, c)).edge(Edge.from_(b).to(c, 2))
    with pytest.raises(DagValidationError, match=r"input ordinals of vertex 'c' must be 0..1 .*\[0, 2\]"):
        dag.validate()


def test_cycle_is_rejected_naming_its_vertices():
    dag, (a, b, c, d) = _dag("a", "b", "c", "d")
    dag.edge(Edge.between(a, b)).edge(Edge.between(b, c)).edge(Edge.from_(c).to(b, 1))
    dag.edge(Edge.from_(c, 1).to(d))
    with pytest.raises(DagValidationError, match="cycle: b -> c -> b"):
        dag.validate()


def test_hash_partitioner_on_a_distributed_edge_is_rejected():
    dag, (a, b) = _dag("a", "b")
    with pytest.raises(DagValidationError, match="not stable across processes"):
        dag.edge(Edge.between(a, b).partitioned(str, HASH_PARTITIONER).distributed())


def test_bad_local_parallelism_names_the_vertex():
    dag = DAG()
    with pytest.raises(DagValidationError, match="vertex 'x': local_parallelism must be"):
        dag.new_vertex("x", noop_p(), 0)


def test_non_callable_supplier_is_rejected():
    with pytest.raises(DagValidationError, match="processor_supplier must be a callable"):
        DAG().new_vertex("x", 42)


def test_iteration_is_topological_and_stable():
    dag, (sink, mid, src) = _dag("sink", "mid", "src")
    dag.edge(Edge.between(src, mid)).edge(Edge.between(mid, sink))
    assert [v.name for v in dag] == ["src", "mid", "sink"]


def test_edge_config_rejects_nonpositive_values():
    with pytest.raises(ValueError, match="EdgeConfig.queue_size must be a positive integer"):
        EdgeConfig(queue_size=0)
    assert EdgeConfig() == EdgeConfig(16384, 8192, 16384, 3)


def test_dot_of_a_two_stage_aggregation_equals_jets_format():
    dag = DAG()
    source = dag.new_vertex('files "source"', noop_p(), 1)
    tokenize = dag.new_vertex("fused(flat-map, filter)", noop_p(), 2)
    prepare = dag.new_vertex("group-and-aggregate-prepare", noop_p(), 2)
    combine = dag.new_vertex("group-and-aggregate", noop_p())
    sink = dag.new_vertex("loggerSink", noop_p(), 1)
    side = dag.new_vertex("side", noop_p(), 1)
    dag.edge(Edge.between(source, tokenize))
    dag.edge(Edge.between(tokenize, prepare).partitioned(str, HASH_PARTITIONER))
    dag.edge(Edge.between(prepare, combine).partitioned(str).distributed())
    dag.edge(Edge.between(combine, sink).set_config(EdgeConfig(queue_size=64)))
    dag.edge(Edge.from_(combine, 1).to(side).broadcast().priority(-1))
    assert dag.to_dot() == (
        'digraph DAG {\n'
        '\t"files \\"source\\"" [localParallelism=1];\n'
        '\t"fused(flat-map, filter)" [localParallelism=2];\n'
        '\t"group-and-aggregate-prepare" [localParallelism=2];\n'
        '\t"group-and-aggregate" [localParallelism=default];\n'
        '\t"loggerSink" [localParallelism=1];\n'
        '\t"side" [localParallelism=1];\n'
        '\t"files \\"source\\"" -> "fused(flat-map, filter)" [queueSize=16384];\n'
        '\t"fused(flat-map, filter)" -> "group-and-aggregate-prepare" [label="partitioned", queueSize=16384];\n'
        '\tsubgraph cluster_0 {\n'
        '\t\t"group-and-aggregate-prepare" -> "group-and-aggregate" [label="distributed-partitioned", queueSize=16384];\n'
        '\t}\n'
        '\t"group-and-aggregate" -> "loggerSink" [taillabel=0, queueSize=64];\n'
        '\t"group-and-aggregate" -> "side" [label="broadcast", taillabel=1, queueSize=16384];\n'
        '}')
    assert '"group-and-aggregate" [localParallelism=4]' in dag.to_dot(default_local_parallelism=4)


def test_isolated_distributed_edge_is_rejected():
    dag, (a, b) = _dag("a", "b")
    with pytest.raises(DagValidationError, match="isolated and distributed"):
        dag.edge(Edge.between(a, b).isolated().distributed())
