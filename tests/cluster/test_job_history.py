"""The coordinator keeps a bounded history of finished jobs: a count and an age."""

import jet
import pytest
from jet.cluster.coordination.coordinator import JobCoordinator, JobStatus
from jet.cluster.coordination.job_history import UnknownJobError
from jet.cluster.executions.control_settings import ControlSettings
from jet.cluster.settings import MemberSettings
from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge
from jet.core.processors import items_source_p


def listing_dag(items) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(items), 1)
    sink = dag.new_vertex("sink", lambda: ListResultSinkP("default"), 1)
    dag.edge(Edge.between(source, sink))
    return dag


def test_the_oldest_finished_jobs_beyond_the_count_are_forgotten(tmp_path):
    with jet.local_cluster(members=1, log_dir=tmp_path, max_finished_jobs=2) as cluster:
        jobs = []
        for n in range(3):
            job = cluster.new_job(listing_dag([n]))
            job.join(timeout=60)
            jobs.append(job)
        with pytest.raises(UnknownJobError, match=f"unknown job '{jobs[0].id}'.*2 most recent finished jobs"):
            jobs[0].info()
        with pytest.raises(UnknownJobError, match="unknown job"):
            jobs[0].results()
        assert [job.result() for job in jobs[1:]] == [[1], [2]]
        assert jobs[2].status is JobStatus.COMPLETED


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def never_called(*args):
    raise AssertionError(f"no member call expected, got {args}")


def test_finished_jobs_older_than_the_age_are_forgotten():
    clock = Clock()
    coordinator = JobCoordinator(1, never_called, clock=clock,
                                 control=ControlSettings(finished_job_ttl_s=3600, max_finished_jobs=10))
    old = coordinator.reject("old", ValueError("bad job file"))
    clock.now += 1800
    recent = coordinator.reject("recent", ValueError("bad job file"))
    clock.now += 1801
    with pytest.raises(UnknownJobError, match=f"unknown job '{old}'.*for 3600 s after they end"):
        coordinator.record(old)
    assert coordinator.record(recent).name == "recent"
    assert coordinator.latest().name == "recent"
    clock.now += 1800
    with pytest.raises(UnknownJobError):
        coordinator.results(recent)
    assert coordinator.latest() is None


def test_the_history_bounds_are_member_settings(tmp_path):
    settings = MemberSettings.load(environ={"JET_MAX_FINISHED_JOBS": "5", "JET_FINISHED_JOB_TTL_S": "60"})
    assert (settings.control.max_finished_jobs, settings.control.finished_job_ttl_s) == (5, 60)
    defaults = MemberSettings().control
    assert (defaults.max_finished_jobs, defaults.finished_job_ttl_s) == (1000, 7 * 24 * 3600)


def test_finished_jobs_keep_their_results_within_a_bound_in_bytes_the_oldest_released_first(tmp_path):
    """A cluster that ran job after job kept every finished job's list results (1,000 jobs, 7
    days), and member 0 grew by each job's results."""
    import jet
    from jet import Pipeline, Sinks, Sources
    from jet.cluster.coordination.job_state import JobStateError

    def numbers(count: int) -> Pipeline:
        p = Pipeline.create()
        p.read_from(Sources.items(list(range(count)))).write_to(Sinks.list())
        return p

    with jet.local_cluster(members=2, max_finished_result_bytes=130_000) as cluster:
        jobs = []
        for _ in range(3):  # about 60 kB of pickled results each: two fit
            job = cluster.new_job(numbers(20_000))
            job.join(timeout=60)
            jobs.append(job)
        assert sorted(jobs[2].result()) == list(range(20_000))
        assert sorted(jobs[1].result()) == list(range(20_000))
        with pytest.raises(JobStateError, match="were released.*max_finished_result_bytes"):
            jobs[0].result()
        assert jobs[0].status.value == "COMPLETED"  # the record stays


def test_fetched_results_are_released_after_fetched_result_ttl_s(tmp_path):
    """Results stayed until the bound in bytes pushed them out, fetched or not: member 0 held
    up to 256 MiB of results nobody would ask for again."""
    from jet import Pipeline, Sinks, Sources
    from jet.cluster.coordination.job_state import JobStateError

    p = Pipeline.create()
    p.read_from(Sources.items(list(range(1000)))).write_to(Sinks.list())
    with jet.local_cluster(members=2, log_dir=tmp_path, fetched_result_ttl_s=0) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=60)
        assert sorted(job.result()) == list(range(1000))  # every member's part, as one list
        assert sorted(job.result()) == list(range(1000))  # the Job that fetched them keeps them
        with pytest.raises(JobStateError, match="were released.*fetched_result_ttl_s"):
            cluster.job(job.id).result()  # another handle asks member 0, which let them go
        assert job.status is JobStatus.COMPLETED  # the record stays
    assert MemberSettings.load(environ={"JET_FETCHED_RESULT_TTL_S": "5"}).control.fetched_result_ttl_s == 5
    assert MemberSettings().control.fetched_result_ttl_s == 10
