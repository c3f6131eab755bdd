"""How the planner hands a Spark source's batches to a grouped aggregation that folds them in
Arrow (jet.core.batch_fold), and when it keeps rows."""

from __future__ import annotations

import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, Sources

SOURCE = "spark-parquet(in/)"


def _plan(build, as_dicts=False):
    p = Pipeline.create()
    build(p.read_from(Sources.spark("parquet", "in/", as_dicts=as_dicts)))
    return p.to_dag(2)


def _edges(dag):
    return [line.strip() for line in dag.to_dot(2).splitlines() if "->" in line]


def test_batches_go_whole_to_any_local_first_stage_when_key_and_values_are_columns():
    dag = _plan(lambda s: s.grouping_key(lambda row: row[0])
                .aggregate(A.all_of(A.summing(lambda row: row[1]), A.counting(), A.averaging(lambda row: row[2])))
                .write_to(Sinks.noop()))
    assert dag.get_vertex(SOURCE).processor_supplier.columnar
    assert _edges(dag)[:2] == [
        f'"{SOURCE}" -> "group-and-aggregate-prepare" [queueSize=16384];',  # not partitioned: batches
        '"group-and-aggregate-prepare" -> "group-and-aggregate" [label="distributed-partitioned", queueSize=16384];',
    ]


def test_batches_go_whole_to_the_first_stage_when_the_key_is_a_column_and_a_value_is_computed():
    dag = _plan(lambda s: s.grouping_key(lambda row: row[0])
                .aggregate(A.all_of(A.summing(lambda row: row[1] * 2), A.averaging(lambda row: row[2] + 1)))
                .write_to(Sinks.noop()))
    assert dag.get_vertex(SOURCE).processor_supplier.columnar
    assert _edges(dag)[0] == f'"{SOURCE}" -> "group-and-aggregate-prepare" [queueSize=16384];'


def test_dict_rows_take_batches_for_getters_by_name():
    dag = _plan(lambda s: s.grouping_key(lambda row: row["user"]).aggregate(A.summing(lambda row: row["amount"]))
                .write_to(Sinks.noop()), as_dicts=True)
    assert dag.get_vertex(SOURCE).processor_supplier.columnar


@pytest.mark.parametrize("as_dicts, build", [
    (False, lambda s: s.grouping_key(lambda row: row[0] % 7).aggregate(A.counting())),
    (False, lambda s: s.grouping_key(lambda row: row[0]).aggregate(A.to_list())),
    (False, lambda s: s.grouping_key(lambda row: row["k"]).aggregate(A.counting())),
    (True, lambda s: s.grouping_key(lambda row: row[0]).aggregate(A.counting())),
    (False, lambda s: s.rebalance(lambda row: row[0]).grouping_key(lambda row: row[0]).aggregate(A.counting())),
    (False, lambda s: s.map(lambda row: row).grouping_key(lambda row: row[0]).aggregate(A.counting())),
], ids=["computed-key", "no-arrow-form", "name-on-tuple-rows", "position-on-dict-rows",
        "rebalanced", "row-stage-first"])
def test_rows_otherwise(as_dicts, build):
    dag = _plan(lambda s: build(s).write_to(Sinks.noop()), as_dicts=as_dicts)
    assert not dag.get_vertex(SOURCE).processor_supplier.columnar
    assert not any(SOURCE in edge and "prepare" in edge and "partitioned" not in edge for edge in _edges(dag))
