"""A job with exactly-once survives a killed member and a killed coordinator on real processes:
the local cluster restarts the process, the member rejoins, and the job restarts from its last
snapshot (the coordinator's from the job record in the store). The oracle: the counting job's
result is exactly ``range(N)``."""

import jet
import pytest
from jet.cluster.client import JetClient
from jet.cluster.coordination.job_state import JobStatus
from jet.cluster.local.local_cluster import LocalCluster
from jet.snapshot import SnapshotStore

from tests.cluster.cluster_support import wait_until
from tests.cluster.snapshot_support import counting_dag

pytestmark = pytest.mark.skipif(not hasattr(LocalCluster, "kill_member"),
                                reason="needs the local cluster that restarts its dead members")

EXACTLY_ONCE = {"processing_guarantee": "exactly-once", "snapshot_interval_ms": 200}
TOTAL = 6000
SLOW = {"per_call": 10, "pause_s": 0.02}


def committed(cluster, job_id) -> int:
    return SnapshotStore(cluster.snapshot_store).load_job_record(job_id).last_good_snapshot_id


def test_a_killed_member_restarts_the_job_from_its_last_snapshot(tmp_path):
    with jet.local_cluster(members=3, log_dir=tmp_path, restart_delay_ms=100) as cluster:
        job = cluster.new_job(counting_dag(TOTAL, **SLOW), {**EXACTLY_ONCE, "name": "survivor"})
        wait_until(lambda: committed(cluster, job.id) >= 1, what="two snapshots")
        cluster.kill_member(2)
        wait_until(lambda: job.info()["restarts"] == 1, what="the restart")
        assert "member(s) 2 lost" in job.info()["lastRestartCause"]
        job.join(timeout=120)
        assert sorted(job.result()) == list(range(TOTAL))
        coordinator_log = (tmp_path / "member-0.log").read_text()
        assert "ERROR jet.cluster.coordination.coordinator" not in coordinator_log  # a restart is a warning, not an error
        assert "ERROR jet.cluster.snapshots" not in coordinator_log


def test_a_killed_coordinator_resumes_its_job_from_the_store(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        job = cluster.new_job(counting_dag(TOTAL, **SLOW), {**EXACTLY_ONCE, "name": "resumed"})
        wait_until(lambda: committed(cluster, job.id) >= 1, what="two snapshots")
        cluster.kill_member(0)
        with JetClient(cluster.addresses, cluster.token) as client:
            def resumed():
                try:
                    return client.job(job.id).summary["lastRestartCause"] == "the coordinator restarted"
                except Exception:  # noqa: BLE001 - member 0 is still coming back
                    return False
            wait_until(resumed, 60, "the restarted member 0 resuming the job")
            again = client.job("resumed")
            assert again.id == job.id and again.summary["restarts"] == 1
            again.join(timeout=120)
            assert again.status is JobStatus.COMPLETED
            assert sorted(again.result()) == list(range(TOTAL))
