"""A job's records and snapshots in an S3 store (moto's real S3-compatible server, through s3fs):
a member killed mid-job, the job restored from the bucket, its committed output exact."""

import signal
import time

import jet
from jet.snapshot import SnapshotStore

from tests.cluster.cluster_support import wait_until
from tests.faults.chaos_job import chaos_pipeline, committed_rows, oracle
from tests.s3_server import moto_s3

EVENTS = 8_000


def test_a_job_restored_from_snapshots_in_s3_after_a_member_is_killed_is_exact(tmp_path):
    with moto_s3("jet-snapshots") as endpoint, \
            jet.local_cluster(2, log_dir=tmp_path / "logs", snapshot_store="s3://jet-snapshots/store",
                              snapshot_store_endpoint=endpoint, heartbeat_interval_ms=200,
                              heartbeat_timeout_ms=2000, restart_delay_ms=100) as cluster:
        out_dir = str(tmp_path / "out")
        job = cluster.new_job(chaos_pipeline(out_dir, EVENTS, 2_000),
                              {"name": "s3", "processing_guarantee": "exactly-once", "snapshot_interval_ms": 300})
        store = SnapshotStore("s3://jet-snapshots/store", endpoint_url=endpoint, skip_instance_cache=True)
        wait_until(lambda: store.load_job_record(job.id).last_good_snapshot_id >= 1, 60,
                   "two snapshots committed to the bucket")
        cluster.kill_member(1, signal.SIGKILL)
        wait_until(lambda: job.info()["restarts"] >= 1 and job.info()["status"] == "RUNNING", 60,
                   "the job restored from the bucket")
        expected = oracle(EVENTS)
        wait_until(lambda: sum(committed_rows(out_dir).values()) >= sum(expected.values()), 90,
                   "every window committed")
        time.sleep(0.5)
        assert committed_rows(out_dir) == expected
        job.cancel()
