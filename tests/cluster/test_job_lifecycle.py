"""The coordinator's side of fault tolerance over members played by a plain function
(``fake_members``): snapshots on schedule, suspend/resume, restarts, exports, job records."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from jet.cluster.coordination.job_history import JobResumingError, UnknownJobError
from jet.cluster.coordination.job_state import JobConfigError, JobStateError, JobStatus
from jet.snapshot import SnapshotStore

from tests.cluster.cluster_support import wait_until
from tests.cluster.fake_members import VERTEX, fake_cluster, small_dag

EXACTLY_ONCE = {"name": "counting", "processing_guarantee": "exactly-once", "snapshot_interval_ms": 30}


def committed_id(store: SnapshotStore, job_id: str) -> int:
    return store.load_job_record(job_id).last_good_snapshot_id


def test_snapshots_are_taken_on_schedule_with_ids_rising_by_one(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    seen = []

    def three_more():
        if not seen or seen[-1] != committed_id(members.store, job_id):
            seen.append(committed_id(members.store, job_id))
        return coordinator.record(job_id).snapshots.count >= 4

    wait_until(three_more, what="four committed snapshots")
    snapshot_entries = sorted(members.store.read_snapshot(job_id))
    last = members.store.last_good(job_id).snapshot_id
    assert [value for _, _, value in snapshot_entries] == [last, last]  # both members, this snapshot
    assert all(b > a for a, b in zip(seen, seen[1:]))
    header = coordinator.record(job_id).to_header()
    assert header["processingGuarantee"] == "EXACTLY_ONCE" and header["snapshotCount"] >= 4
    assert header["lastSnapshot"]["keys"] == 2 and header["lastSnapshot"]["bytes"] > 0
    members.finish_all()
    assert coordinator.wait(job_id, 10).status is JobStatus.COMPLETED
    assert members.store.list_jobs() == []  # a finished job's record and slots are gone


def test_a_failed_phase_1_keeps_the_last_good_snapshot(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    wait_until(lambda: coordinator.record(job_id).snapshots.count >= 1, what="a first snapshot")
    members.fail_phase1 = 1
    good = committed_id(members.store, job_id)
    wait_until(lambda: coordinator.record(job_id).snapshots.failures == 1, what="the failed snapshot")
    assert committed_id(members.store, job_id) in (good, good + 2)  # never the failed one
    wait_until(lambda: committed_id(members.store, job_id) > good + 1, what="the next good snapshot")
    assert "fault injection" in coordinator.record(job_id).snapshots.last_failure
    coordinator.cancel(job_id)
    assert coordinator.wait(job_id, 10).status is JobStatus.FAILED


def test_suspend_takes_a_terminal_snapshot_and_resume_restores_it(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "snapshot_interval_ms": 60_000})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    assert members.inits[0]["restore"] is None
    coordinator.suspend(job_id)
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.SUSPENDED, what="SUSPENDED")
    assert members.terminal == {0}
    # the store's copy follows the record just after it
    wait_until(lambda: members.store.load_job_record(job_id).status == "SUSPENDED", what="SUSPENDED stored")
    with pytest.raises(JobStateError, match="only a running job|it is SUSPENDED"):
        coordinator.restart(job_id)
    coordinator.resume(job_id)
    wait_until(lambda: len(members.inits) == 4 and coordinator.record(job_id).status is JobStatus.RUNNING,
               what="the resumed execution")
    assert members.inits[-1]["restore"] == {"job_id": job_id, "snapshot_id": 0, "slot": 0}
    assert members.inits[-1]["execution_id"] != members.inits[0]["execution_id"]
    with pytest.raises(JobStateError, match="only a SUSPENDED job"):
        coordinator.resume(job_id)
    coordinator.cancel(job_id)
    assert coordinator.wait(job_id, 10).status is JobStatus.FAILED
    assert members.store.list_jobs() == []


def test_a_lost_member_restarts_the_job_from_its_last_snapshot_once_it_rejoins(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    wait_until(lambda: coordinator.record(job_id).snapshots.count >= 2, what="two snapshots")
    coordinator.on_member_lost(1, ConnectionError("stream broke"))
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.NOT_RUNNING, what="waiting for member 1")
    restore_from = committed_id(members.store, job_id)
    coordinator.on_member_joined(1)
    wait_until(lambda: len(members.inits) == 4, what="the restarted execution")
    record = coordinator.record(job_id)
    assert record.restarts == 1 and "member(s) 1 lost" in record.last_restart_cause
    assert members.inits[-1]["restore"]["snapshot_id"] == restore_from
    wait_until(lambda: committed_id(members.store, job_id) > restore_from, what="snapshots after the restart")
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)


def test_without_auto_scaling_a_job_whose_member_stays_away_is_suspended(tmp_path):
    coordinator, members = fake_cluster(tmp_path, member_rejoin_timeout_ms=200)
    job_id = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "auto_scaling": False})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    coordinator.on_member_lost(1, ConnectionError("gone"))
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.SUSPENDED, what="SUSPENDED")
    assert "not whole again within 200 ms" in coordinator.record(job_id).to_header()["message"]
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)


def test_a_job_without_guarantee_or_auto_scaling_fails_when_a_member_is_lost(tmp_path):
    coordinator, members = fake_cluster(None)
    job_id = coordinator.submit(small_dag(), {"auto_scaling": False})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    coordinator.on_member_lost(1, ConnectionError("gone"))
    record = coordinator.wait(job_id, 10)
    assert record.status is JobStatus.FAILED and "member 1 was lost" in record.message


def test_a_new_coordinator_over_the_same_store_resumes_the_job_and_its_snapshot_ids(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    wait_until(lambda: coordinator.record(job_id).snapshots.count >= 2, what="two snapshots")
    coordinator.shutdown()  # the old coordinator stops first, then its members cancel their executions
    members.finish_all(cancelled=True)
    members.join_reports()
    last = committed_id(members.store, job_id)
    assert members.store.load_job_record(job_id).status == "RUNNING"  # left for the next coordinator
    successor, new_members = fake_cluster(tmp_path)
    # Until it has read the store, it says the job resumes rather than that it never heard of it.
    with pytest.raises(JobResumingError, match="resumes once the cluster is whole"):
        successor.record(job_id)
    with pytest.raises(UnknownJobError):
        successor.record("0000-0000-0000-0000")
    assert successor.resume_stored_jobs() == [job_id]
    assert successor.submit_or_resume(small_dag(), EXACTLY_ONCE) == job_id  # --pipeline on a restarted member 0
    wait_until(lambda: new_members.inits and successor.record(job_id).status is JobStatus.RUNNING,
               what="the resumed job")
    assert new_members.inits[0]["restore"]["snapshot_id"] == last
    record = successor.record(job_id)
    assert record.restarts == 1 and record.last_restart_cause == "the coordinator restarted"
    wait_until(lambda: committed_id(new_members.store, job_id) > last, what="a snapshot after the resume")
    successor.cancel(job_id)
    successor.wait(job_id, 10)


def test_an_export_starts_a_new_job_and_stays_after_its_job_is_gone(tmp_path):
    coordinator, members = fake_cluster(tmp_path)
    job_id = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "snapshot_interval_ms": 60_000})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    exported = coordinator.export_snapshot(job_id, "v1", cancel=True)
    assert exported["name"] == "v1" and exported["keys"] == 2
    assert coordinator.wait(job_id, 10).status is JobStatus.FAILED
    assert [s["name"] for s in coordinator.snapshots()] == ["v1"]
    entries = sorted(members.store.read_export("v1"))
    assert [vertex for vertex, _, _ in entries] == [VERTEX, VERTEX]
    upgraded = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "name": "v2", "initial_snapshot_name": "v1"})
    wait_until(lambda: coordinator.record(upgraded).status is JobStatus.RUNNING, what="the upgraded job")
    assert members.inits[-1]["restore"] == {"export": "v1"}
    coordinator.cancel(upgraded)
    coordinator.wait(upgraded, 10)


def test_an_export_asked_for_as_the_job_turns_running_waits_for_its_snapshots_and_is_taken(tmp_path):
    """RUNNING comes before the snapshots start; an export asked for then used to find no
    snapshot coordinator, fail the job and say it was "between two executions"."""
    coordinator, members = fake_cluster(tmp_path)
    members.running_gate = threading.Event()
    job_id = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "snapshot_interval_ms": 60_000})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    with ThreadPoolExecutor(1) as pool:
        export = pool.submit(coordinator.export_snapshot, job_id, "early", True)
        time.sleep(0.2)
        assert not export.done(), "the export waits for the snapshots to start"
        members.running_gate.set()
        exported = export.result(timeout=20)
    assert exported["name"] == "early" and exported["keys"] == 2
    assert coordinator.wait(job_id, 10).status is JobStatus.FAILED  # cancelled after the export
    assert [s["name"] for s in coordinator.snapshots()] == ["early"]


def test_configs_this_cluster_cannot_run_are_refused_at_submission(tmp_path):
    without_store, _ = fake_cluster(None)
    with pytest.raises(JobConfigError, match="needs a snapshot store.*JET_SNAPSHOT_STORE"):
        without_store.submit(small_dag(), {"processing_guarantee": "at-least-once"})
    with_store, _ = fake_cluster(tmp_path)
    with pytest.raises(JobConfigError, match="initial_snapshot_name 'nope'.*doesn't exist"):
        with_store.submit(small_dag(), {"initial_snapshot_name": "nope"})
    with pytest.raises(JobConfigError, match="snapshot_interval_ms must be"):
        with_store.submit(small_dag(), {"snapshot_interval_ms": 0})
    job_id = with_store.submit(small_dag(), {"name": "plain"})
    with pytest.raises(JobStateError, match="processing guarantee NONE"):
        with_store.export_snapshot(job_id, "x")
    with_store.cancel(job_id)
    with_store.wait(job_id, 10)


def test_restarts_in_a_row_back_off_and_stop_at_max_restarts(tmp_path):
    coordinator, members = fake_cluster(tmp_path, restart_delay_ms=100, restart_max_delay_ms=200,
                                        max_restarts=3)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    pauses = []
    for restart in range(1, 4):
        wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
        inits = len(members.inits)
        lost_at = time.monotonic()
        coordinator.on_member_lost(1, ConnectionError("stream broke"))
        coordinator.on_member_joined(1)
        wait_until(lambda: len(members.inits) > inits, what=f"restart {restart}")
        pauses.append(time.monotonic() - lost_at)
        assert coordinator.record(job_id).restarts == restart
    assert pauses[0] >= 0.1 and pauses[1] >= 0.2 and pauses[2] >= 0.2  # 100, 200, then the cap
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    coordinator.on_member_lost(1, ConnectionError("stream broke"))
    coordinator.on_member_joined(1)
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.SUSPENDED, what="SUSPENDED")
    record = coordinator.record(job_id)
    assert record.restarts == 3 and "restarted 3 times in a row (max_restarts)" in record.suspension_cause
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)
