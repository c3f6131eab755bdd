"""``jet job`` against a running local cluster: list, status, suspend, resume, cancel, exit codes."""

import json
from pathlib import Path

import jet
import pytest
from jet.cluster.coordination.job_state import JobStatus

from tests.cli.support import jet as run_jet
from tests.cli.support import jet_env
from tests.cluster.cluster_support import endless_dag, wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with jet.local_cluster(members=2, log_dir=tmp_path_factory.mktemp("logs")) as running:
        yield running


def jet_job(cluster, *args, token=None):
    return run_jet("job", "--address", cluster.addresses[0], "--timeout", 30, *args,
               env=jet_env(JET_CLUSTER_TOKEN=token or cluster.token))


def test_list_status_suspend_resume_and_cancel_a_job_by_its_name(cluster):
    job = cluster.new_job(endless_dag(), {"name": "endless"})
    wait_until(lambda: job.status is JobStatus.RUNNING, what="RUNNING")

    listed = jet_job(cluster, "list")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "STATUS", "GUARANTEE", "RESTARTS", "LAST", "SNAPSHOT"]
    assert any(row.split()[:5] == [job.id, "endless", "RUNNING", "NONE", "0"] for row in rows)

    status = jet_job(cluster, "status", "endless")
    assert status.returncode == 0, status.stderr
    info = json.loads(status.stdout)
    assert (info["jobId"], info["status"], info["lastSnapshot"], info["snapshotCount"]) == (job.id, "RUNNING", None, 0)

    suspended = jet_job(cluster, "suspend", "endless")
    assert (suspended.returncode, suspended.stdout.strip()) == (0, f"job endless ({job.id}): SUSPENDED")
    assert job.status is JobStatus.SUSPENDED

    refused = jet_job(cluster, "export-snapshot", "endless", "v1")
    assert refused.returncode == 1 and "processing guarantee NONE" in refused.stderr

    resumed = jet_job(cluster, "resume", "endless")
    assert resumed.returncode == 0, resumed.stderr
    wait_until(lambda: job.status is JobStatus.RUNNING, what="RUNNING again")
    again = jet_job(cluster, "resume", job.id)
    assert again.returncode == 1 and "only a SUSPENDED job can be resumed" in again.stderr

    cancelled = jet_job(cluster, "cancel", job.id)
    assert cancelled.returncode == 0, cancelled.stderr
    wait_until(lambda: job.status is JobStatus.FAILED, what="FAILED")

    # A job that already ended is refused with the reason (exit 1), not an internal error that
    # member 0 logs at ERROR (it was exit 3 with "INTERNAL: JobStateError").
    again = jet_job(cluster, "cancel", job.id)
    assert again.returncode == 1, again.stderr
    assert again.stderr.strip() == f"jet job: cannot cancel job endless ({job.id}): it is FAILED", again.stderr
    assert " ERROR " not in cluster.log_paths[0].read_text()


def test_unknown_jobs_and_wrong_tokens_have_their_exit_codes(cluster):
    unknown = jet_job(cluster, "status", "no-such-job")
    assert unknown.returncode == 2 and "unknown job 'no-such-job'" in unknown.stderr
    denied = jet_job(cluster, "list", token="not-the-token")
    assert denied.returncode == 3 and "cannot reach the cluster" in denied.stderr
    listed = jet_job(cluster, "snapshots")
    assert listed.returncode == 0 and listed.stdout.split() == ["NAME", "JOB", "JOB", "NAME", "SNAPSHOT", "BYTES",
                                                                  "KEYS", "CREATED"]


def test_an_unreachable_cluster_exits_3_once_the_timeout_is_over():
    from jet.cluster.local.local_cluster import free_ports
    port = free_ports(1)[0]  # nothing listens there
    # The subprocess bound (20 s) is below the client's default call timeout (30 s): a command
    # that ignored --timeout would not finish in it.
    result = run_jet("job", "--address", f"127.0.0.1:{port}", "--timeout", 1, "list", timeout=20,
                     env=jet_env(JET_CLUSTER_TOKEN="some-token"))
    assert result.returncode == 3, result.stderr
    assert f"cannot reach the cluster at 127.0.0.1:{port}" in result.stderr


def test_an_exported_snapshot_can_be_deleted_and_a_missing_one_is_refused(cluster):
    """Exports could never be deleted, so every savepoint-style upgrade grew the store."""
    job = cluster.new_job(endless_dag(), {"name": "exporting", "processing_guarantee": "exactly_once",
                                         "snapshot_interval_ms": 200})
    wait_until(lambda: job.status is JobStatus.RUNNING, what="RUNNING")
    exported = jet_job(cluster, "export-snapshot", "exporting", "before-upgrade")
    assert exported.returncode == 0, exported.stderr
    assert [s["name"] for s in cluster.snapshots()] == ["before-upgrade"]

    deleted = jet_job(cluster, "delete-snapshot", "before-upgrade")
    assert (deleted.returncode, deleted.stdout.strip()) == (0, "snapshot 'before-upgrade' deleted"), deleted.stderr
    assert cluster.snapshots() == []
    assert not list((Path(cluster.snapshot_store) / "exports").iterdir())  # gone from the store itself

    again = jet_job(cluster, "delete-snapshot", "before-upgrade")
    assert again.returncode == 1 and "no exported snapshot named 'before-upgrade'" in again.stderr
    job.cancel()
    wait_until(lambda: job.status is JobStatus.FAILED, what="cancelled")
