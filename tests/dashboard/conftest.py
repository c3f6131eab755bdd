"""A local cluster of two members for the dashboard tests, with one streaming job running."""

import jet
import pytest
from jet.cluster.coordination.job_state import JobStatus

from tests.cluster.cluster_support import wait_until
from tests.dashboard.support import stream_dag


@pytest.fixture(scope="module")
def cluster():
    with jet.local_cluster(members=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def stream_job(cluster):
    """A streaming exactly-once job (snapshots every 500 ms) and the DAG the test built for it."""
    dag = stream_dag()
    job = cluster.new_job(dag, {"name": "dashboard-stream", "processing_guarantee": "exactly-once",
                                "snapshot_interval_ms": 500})
    wait_until(lambda: job.status is JobStatus.RUNNING, timeout_s=30, what="the stream job RUNNING")
    yield job, dag
    job.cancel()
