"""A member lets go of a finished job: job after job, its executions, tasklets, queues and items
are freed by reference counting when the job ends, not left for a full collection (issue 32)."""

import jet
import pytest

from tests.cluster.heap_support import finite_stream_pipeline, member_heap_pipeline
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
