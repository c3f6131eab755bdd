"""``jet run --processing-guarantee ... --snapshot-interval ...``: snapshots on local members."""

import json
import re
import signal
import subprocess
import urllib.request
from pathlib import Path

from jet.cluster.local.local_cluster import free_ports

from tests.cli.support import jet, jet_command, jet_env, write_job
from tests.cluster.cluster_support import wait_until

JOB = """
from tests.cluster.snapshot_support import counting_dag

dag = counting_dag(2000, per_call=10, pause_s=0.02)
"""


def test_a_job_with_exactly_once_snapshots_into_the_printed_directory(tmp_path):
    job = write_job(tmp_path, "counting.py", JOB)
    result = jet("run", "--members", 2, "--processing-guarantee", "exactly-once", "--snapshot-interval", "200ms",
                 job, "--output", tmp_path / "out.jsonl")
    assert result.returncode == 0, result.stderr
    printed = re.findall(r"jet run: job records and snapshots in (\S+)", result.stderr)
    assert len(printed) == 1 and Path(printed[0]).is_dir()
    assert not any(Path(printed[0], "jobs").glob("*"))  # the completed job's record and snapshots are gone
    numbers = sorted(int(line) for line in (tmp_path / "out.jsonl").read_text().splitlines())
    assert numbers == list(range(2000))
    assert re.search(r"job \S+: snapshot \d+ committed in \d+ ms", result.stderr)  # the coordinator's log


def test_bad_guarantees_and_intervals_are_usage_errors(tmp_path):
    job = write_job(tmp_path, "counting.py", JOB)
    bad_guarantee = jet("run", "--processing-guarantee", "twice", job)
    assert bad_guarantee.returncode == 2 and "'twice' is not one of" in bad_guarantee.stderr
    bad_interval = jet("run", "--snapshot-interval", "0s", job)
    assert bad_interval.returncode == 2 and "a duration must be above 0" in bad_interval.stderr


LONG_JOB = """
from tests.cluster.snapshot_support import counting_dag

dag = counting_dag(10_000_000, per_call=5, pause_s=0.05)
"""


def member_job(port: int, http_port: int, token: str) -> dict | None:
    request = urllib.request.Request(f"http://127.0.0.1:{http_port}/job", headers={"Authorization": f"Bearer {token}"})
    try:
        return json.loads(urllib.request.urlopen(request, timeout=5).read())
    except OSError:
        return None


def test_a_restarted_member_0_with_its_pipeline_resumes_the_recorded_job(tmp_path):
    job = write_job(tmp_path, "endless_count.py", LONG_JOB)
    port, http_port = free_ports(2)
    token = "member-0-restart-token"
    command = jet_command("member", "--port", port, "--http-port", http_port, "--pipeline", job,
                          "--processing-guarantee", "exactly-once", "--snapshot-interval", "200ms",
                          "--snapshot-store", tmp_path / "store")
    env = jet_env(JET_CLUSTER_TOKEN=token)
    first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        info = wait_until(lambda: (member_job(port, http_port, token) or {}).get("snapshotCount", 0) >= 2 and
                          member_job(port, http_port, token), 60, "two snapshots of the --pipeline job")
        assert (info["name"], info["processingGuarantee"]) == ("endless_count", "EXACTLY_ONCE")
        first.send_signal(signal.SIGTERM)  # the pod is deleted: its job stays recorded in the store
        assert first.wait(30) == 0
        second = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            resumed = wait_until(lambda: (member_job(port, http_port, token) or {}).get("status") == "RUNNING" and
                                 member_job(port, http_port, token), 60, "the job resumed by the new member 0")
            assert resumed["jobId"] == info["jobId"]
            assert (resumed["restarts"], resumed["lastRestartCause"]) == (1, "the coordinator restarted")
            assert resumed["lastSnapshot"]["id"] >= info["lastSnapshot"]["id"]
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(30)
    finally:
        if first.poll() is None:
            first.kill()


def test_a_run_starts_from_an_exported_snapshot_of_its_store(tmp_path):
    """`jet run` had no --initial-snapshot-name: the upgrade path needed a cluster of one's own."""
    from jet.cluster.coordination.job_state import JobStatus
    from jet.local import local_cluster
    from tests.cluster.snapshot_support import counting_dag

    store = tmp_path / "store"
    with local_cluster(members=2, snapshot_store=str(store)) as cluster:
        earlier = cluster.new_job(counting_dag(2000, per_call=10, pause_s=0.02),
                                  {"processing_guarantee": "exactly_once", "snapshot_interval_ms": 200})
        wait_until(lambda: earlier.status is JobStatus.RUNNING and earlier.info()["snapshotCount"] >= 2,
                   what="two snapshots")
        earlier.cancel_and_export_snapshot("v1")
    job = write_job(tmp_path, "counting.py", JOB)
    result = jet("run", "--members", 2, "--processing-guarantee", "exactly-once", "--snapshot-store", store,
                 "--initial-snapshot-name", "v1", job, "--output", tmp_path / "out.jsonl")
    assert result.returncode == 0, result.stderr
    assert "restores exported snapshot 'v1'" in result.stderr
    # What the export held (the sink's items, the sources' positions) and the rest: each number once.
    numbers = sorted(int(line) for line in (tmp_path / "out.jsonl").read_text().splitlines())
    assert numbers == list(range(2000))

    refused = jet("run", "--initial-snapshot-name", "v1", job)
    assert refused.returncode == 2 and "--initial-snapshot-name needs --snapshot-store" in refused.stderr
