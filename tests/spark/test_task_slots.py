"""Sources and sinks in one SparkSession never take each other's task slots."""

from types import SimpleNamespace

import pytest
from jet.core import DAG
from jet.core.processors import noop_p
from jet.spark.job_stages import sink_task_count
from jet.spark.runner import _write_task_limit


def _session(slots):
    return SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=slots))


def test_readers_keep_a_slot_each_and_the_writers_share_the_rest():
    dag = DAG()
    dag.new_vertex("sink-a", noop_p(), 1)
    dag.new_vertex("sink-b", noop_p(), 2)
    assert sink_task_count(dag, ["sink-a", "sink-b"], member_count=2) == 6
    sources, sinks = [("src-1", None), ("src-2", None)], [("sink-a", None), ("sink-b", None)]
    assert _write_task_limit(_session(10), dag, sources, sinks, 2) == 2
    assert _write_task_limit(_session(10), dag, sources, [], 2) is None, "no readers: no limit"


def test_a_session_without_a_slot_for_a_writer_is_refused_with_what_it_needs():
    dag = DAG()
    dag.new_vertex("sink", noop_p(), 1)
    with pytest.raises(ValueError, match=r"has 2 task slots.*need 2 reader tasks.*local\[4\]"):
        _write_task_limit(_session(2), dag, [("src", None)], [("sink", None)], 2)


def test_a_session_too_small_for_the_job_fails_it_instead_of_hanging(spark, tmp_path):
    from jet.connectors import Sinks, Sources
    from jet.pipeline import Pipeline

    from tests.spark.harness import run_with_spark

    source = str(tmp_path / "in.parquet")
    spark.range(0, 100).write.parquet(source)
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", source)).write_to(Sinks.spark("parquet", str(tmp_path / "out")))
    with pytest.raises(Exception, match="task slots") as failure:
        run_with_spark(spark, pipeline, members=4, timeout=60)  # 4 readers fill the 4 slots
    assert "local[6]" in str(failure.value)
