"""Pipelines submitted to a local cluster of member processes, from Python."""

import pytest

import jet
from jet import AggregateOperations, Pipeline, Sinks, Sources


def test_a_pipeline_runs_on_a_local_cluster_and_returns_its_results(tmp_path):
    (tmp_path / "a.txt").write_text("to be or not to be\n" * 50)
    (tmp_path / "b.txt").write_text("that is the question\n" * 30)
    p = Pipeline.create()
    counts = (p.read_from(Sources.files(str(tmp_path / "*.txt"))).flat_map(str.split)
              .grouping_key(lambda w: w).aggregate(AggregateOperations.counting()))
    counts.write_to(Sinks.list())
    counts.aggregate(AggregateOperations.counting()).write_to(Sinks.list("distinct"))
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=60)
        assert dict(job.result()) == {"to": 100, "be": 100, "or": 50, "not": 50, "that": 30,
                                      "is": 30, "the": 30, "question": 30}
        assert job.result("distinct") == [8]
        with pytest.raises(KeyError, match="no result named 'missing'"):
            job.result("missing")


def test_a_pipeline_whose_source_cannot_be_opened_is_refused_before_submission(tmp_path):
    p = Pipeline.create()
    p.read_from(Sources.files(str(tmp_path / "nothing-*.txt"))).write_to(Sinks.list())
    with jet.local_cluster(members=1) as cluster:
        with pytest.raises(FileNotFoundError, match="nothing-"):
            cluster.new_job(p)


def test_a_global_aggregation_without_combine_gives_one_result_on_several_members():
    """Every member's processor emitted a result, the ones the all-to-one edge does not feed an
    empty one: [0, 4950] on 2 members."""
    from jet import AggregateOperation

    def add(acc, x):
        acc[0] += x
        return acc

    total = AggregateOperation(create=lambda: [0], accumulate=add, combine=None, finish=lambda acc: acc[0])
    with jet.local_cluster(members=2) as cluster:
        for items, expected in ((list(range(100)), [4950]), ([], [0])):
            p = Pipeline.create()
            p.read_from(Sources.items(items)).aggregate(total).write_to(Sinks.list())
            job = cluster.new_job(p)
            job.join(timeout=60)
            assert job.result() == expected
