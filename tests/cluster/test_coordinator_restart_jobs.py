"""Member 0 dies under a running job: every job has a record in the store while it runs, so the
restarted member 0 runs it again, and the client's join sees it end (on real member processes)."""

from __future__ import annotations

import signal

import jet
from jet.cluster.coordination.job_state import JobStatus
from tests.cluster.cluster_support import wait_until
from tests.cluster.member_loss_support import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TIMEOUT_MS
from tests.cluster.snapshot_support import counting_dag

TOTAL = 3000


def test_a_job_without_a_guarantee_survives_member_0_and_restarts_from_the_start(tmp_path):
    """It vanished: join() raised UnknownJobError 'never submitted' and no record was kept."""
    with jet.local_cluster(members=2, log_dir=tmp_path, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                           heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS) as cluster:
        job = cluster.new_job(counting_dag(TOTAL, per_call=10, pause_s=0.02), {"name": "no-guarantee"})
        wait_until(lambda: job.status is JobStatus.RUNNING, what="RUNNING")
        cluster.kill_member(0, signal.SIGKILL)
        job.join(timeout=120)  # waits out member 0's restart
        info = job.info()
        assert info["restarts"] == 1 and info["lastRestartCause"] == "the coordinator restarted", info
        assert sorted(job.result()) == list(range(TOTAL))  # from the start: every number once
        log = cluster.log_paths[0].read_text()
        assert "found in the snapshot store: resumes from the start" in log
