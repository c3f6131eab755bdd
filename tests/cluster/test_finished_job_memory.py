"""A member lets go of a finished job: job after job, its executions, tasklets, queues and items
are freed by reference counting when the job ends, not left for a full collection (issue 32)."""

import jet
import pytest
from jet import Pipeline, Sinks, Sources
from jet.cluster.coordination.job_state import JobRecord, JobRun, JobStateError
from jet.dashboard.job_view import dag_view

from tests.cluster.heap_support import Item, finite_stream_pipeline, member_heap_pipeline
from tests.cluster.cluster_support import wait_until


def heaps(cluster, disable_gc: bool = False) -> dict:
    job = cluster.new_job(member_heap_pipeline(disable_gc))
    job.join(timeout=60)
    return dict(job.result("heap"))


@pytest.mark.timeout(180)
def test_after_jobs_every_member_holds_what_it_held_before(tmp_path):
    """A streaming job's execution was freed only by a full collection (its progress log held it
    in a cycle), and a parked cooperative thread held the last job's tasklets, with their
    processors' state and the results they collected, until the next job came."""
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        baseline = heaps(cluster, disable_gc=True)  # only reference counting frees from here on
        assert all(counts["JobExecution"] == 1 and counts["Item"] == 0 for counts in baseline.values())
        for _ in range(3):
            job = cluster.new_job(finite_stream_pipeline(5_000))
            job.join(timeout=60)
            assert len(job.result("items")) == 10_000 and sum(job.result("counts")) == 10_000
        # an execution's end report may still be on its way out of a member when join returns
        wait_until(lambda: heaps(cluster) == baseline, timeout_s=20, interval_s=0.2,
                   what=f"every member back at {baseline}")


def items_pipeline() -> Pipeline:
    p = Pipeline.create()
    p.read_from(Sources.items([Item(n) for n in range(1000)])).write_to(Sinks.noop())
    return p


@pytest.mark.timeout(120)
def test_a_finished_job_keeps_its_dags_shape_not_its_sources_items(tmp_path):
    """Member 0 keeps a finished job's DAG for the dashboard, for up to 1,000 jobs and 7 days;
    with its processor suppliers it kept every item a ``Sources.items`` source was given."""
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        heaps(cluster, disable_gc=True)
        for _ in range(2):
            cluster.new_job(items_pipeline()).join(timeout=60)
        wait_until(lambda: all(counts["Item"] == 0 for counts in heaps(cluster).values()), timeout_s=20,
                   interval_s=0.2, what="no item of the finished jobs' sources in any member")


def test_a_finished_jobs_dag_still_draws_on_the_dashboard():
    run = JobRun(JobRecord("a-job", "a-job"), items_pipeline().to_dag(), b"dag")
    run.release_finished()
    assert run.dag_bytes is None
    assert [vertex["name"] for vertex in dag_view(run.dag, 1)["vertices"]] == ["items", "noop"]
    with pytest.raises(JobStateError, match="processors were released"):
        run.dag.vertices[0].processor_supplier()
