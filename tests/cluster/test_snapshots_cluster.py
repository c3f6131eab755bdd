"""Snapshots, suspend/resume, restart and exports on real member processes.

The job (``snapshot_support.counting_dag``) emits ``0..N-1`` from a source whose offset is its
snapshot state into a list sink whose items are its state, so under exactly-once its result is
exactly ``range(N)`` however often it is stopped and restored: the oracle."""

import re
import urllib.request

import jet
import pytest
from jet.cluster.coordination.job_state import JobStatus
from jet.snapshot import SnapshotStore

from tests.cluster.cluster_support import wait_until
from tests.cluster.snapshot_support import counting_dag

EXACTLY_ONCE = {"processing_guarantee": "exactly-once", "snapshot_interval_ms": 150}
SLOW = {"per_call": 5, "pause_s": 0.02}
"""About 8 s for 4,000 numbers on 2 members: time to act on the job while it runs."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with jet.local_cluster(members=2, log_dir=tmp_path_factory.mktemp("logs")) as running:
        yield running


def committed(cluster, job) -> int:
    """The job's last good snapshot id in the store (-1: none yet)."""
    return SnapshotStore(cluster.snapshot_store).load_job_record(job.id).last_good_snapshot_id


def test_snapshots_are_committed_on_schedule_with_rising_ids(cluster):
    job = cluster.new_job(counting_dag(4000, **SLOW), {**EXACTLY_ONCE, "name": "scheduled"})
    ids = []

    def three_committed():
        snapshot_id = committed(cluster, job)
        if snapshot_id >= 0 and (not ids or ids[-1] != snapshot_id):
            ids.append(snapshot_id)
        return len(ids) >= 3

    wait_until(three_committed, what="three committed snapshots")
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    # The store's record is the commit point; the job's figures follow it a moment later.
    wait_until(lambda: job.info()["snapshotCount"] >= 3, what="the job counting three snapshots")
    info = job.info()
    assert info["processingGuarantee"] == "EXACTLY_ONCE"
    assert info["lastSnapshot"]["bytes"] > 0 and info["lastSnapshot"]["keys"] == 4  # 2 sources, 2 sinks
    job.join(timeout=60)
    assert sorted(job.result()) == list(range(4000))
    assert SnapshotStore(cluster.snapshot_store).list_jobs() == []  # gone with the completed job


def test_suspend_and_resume_continue_exactly_where_the_job_was(cluster):
    job = cluster.new_job(counting_dag(4000, **SLOW), {**EXACTLY_ONCE, "name": "suspended"})
    wait_until(lambda: job.status is JobStatus.RUNNING and committed(cluster, job) >= 0, what="a first snapshot")
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    info = job.info()
    assert info["lastSnapshot"]["id"] == committed(cluster, job)
    partial = job.result()
    assert 0 < len(partial) < 4000
    job.resume()
    job.join(timeout=60)
    assert sorted(job.result()) == list(range(4000))


def test_restart_goes_on_from_a_terminal_snapshot(cluster):
    job = cluster.new_job(counting_dag(4000, **SLOW), {**EXACTLY_ONCE, "name": "restarted"})
    wait_until(lambda: committed(cluster, job) >= 0, what="a first snapshot")
    job.restart()
    wait_until(lambda: job.info()["restarts"] == 1, what="the restart")
    assert job.info()["lastRestartCause"] == "restart requested"
    job.join(timeout=60)
    assert sorted(job.result()) == list(range(4000))


def test_an_exported_snapshot_starts_the_upgraded_job(cluster):
    old = cluster.new_job(counting_dag(4000, **SLOW), {**EXACTLY_ONCE, "name": "v1"})
    wait_until(lambda: committed(cluster, old) >= 0, what="a first snapshot")
    exported = old.cancel_and_export_snapshot("counting-v1")
    assert exported["name"] == "counting-v1" and exported["keys"] == 4
    wait_until(lambda: old.status is JobStatus.FAILED, what="the old job cancelled")
    assert [s["name"] for s in cluster.client.snapshots()] == ["counting-v1"]
    new = cluster.new_job(counting_dag(4000, **SLOW),
                          {**EXACTLY_ONCE, "name": "v2", "initial_snapshot_name": "counting-v1"})
    new.join(timeout=60)
    assert sorted(new.result()) == list(range(4000))
    assert cluster.client.job("v2").id == new.id


def test_metrics_show_each_jobs_restarts_and_last_snapshot(cluster):
    job = cluster.new_job(counting_dag(2000, **SLOW), {**EXACTLY_ONCE, "name": "measured"})
    wait_until(lambda: job.info()["snapshotCount"] >= 1, what="a snapshot")
    url = f"http://127.0.0.1:{cluster.http_ports[0]}/metrics"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    labels = f'job="{job.id}",job_name="measured"'
    assert re.search(rf"jet_job_restarts_total\{{{labels}\}} 0\.0", text)
    assert re.search(rf"jet_snapshot_bytes\{{{labels}\}} [1-9]", text)
    assert re.search(rf"jet_snapshot_duration_seconds\{{{labels}\}} ", text)
    job.join(timeout=60)


def test_a_failed_snapshot_keeps_the_previous_one(tmp_path):
    with jet.local_cluster(members=2, log_dir=tmp_path, fault_fail_snapshot_phase1=1) as cluster:
        job = cluster.new_job(counting_dag(3000, **SLOW), {**EXACTLY_ONCE, "name": "faulty"})
        wait_until(lambda: job.info()["snapshotFailures"] >= 1, what="the failed snapshot")
        assert committed(cluster, job) == -1  # the first snapshot (id 0) failed: nothing committed
        wait_until(lambda: committed(cluster, job) >= 1, what="a good snapshot after the failed one")
        job.join(timeout=60)
        assert sorted(job.result()) == list(range(3000))
        assert "fault injection" in (tmp_path / "member-0.log").read_text()


class DistinctKeys:
    """Emits keys 0..count-1 once at event time 0, then nothing."""

    def __init__(self, count: int) -> None:
        self.count, self.next = count, 0

    def fill(self, buffer) -> None:
        end = min(self.count, self.next + 5000)
        for key in range(self.next, end):
            buffer.add(key, 0)
        self.next = end

    def restore(self, saved: list) -> None:
        self.next = min(saved)


def test_each_member_restores_only_the_chunks_of_its_partitions(tmp_path):
    """A window of 20,000 keys on 2 real members: each member's log says how much of the
    snapshot it read at the restart; about half of the keyed chunks and entries, not all."""
    keys = 20_000
    source = (jet.SourceBuilder.timestamped_stream("distinct-keys", lambda context: DistinctKeys(keys))
              .fill_buffer_fn(DistinctKeys.fill).create_snapshot_fn(lambda state: state.next)
              .restore_snapshot_fn(DistinctKeys.restore).build())
    p = jet.Pipeline.create()
    (p.read_from(source).with_native_timestamps(0).grouping_key(lambda key: key)
     .window(jet.WindowDefinition.tumbling(3_600_000)).aggregate(jet.AggregateOperations.counting())
     .write_to(jet.Sinks.logger()))
    with jet.local_cluster(members=2, log_dir=tmp_path) as running:
        job = running.new_job(p, {**EXACTLY_ONCE, "name": "large-state"})
        wait_until(lambda: (job.info().get("lastSnapshot") or {}).get("keys", 0) >= keys,
                   what="a snapshot of every key", timeout_s=120)
        job.restart()
        wait_until(lambda: job.info()["restarts"] == 1 and job.status is JobStatus.RUNNING, what="the restart")
        job.cancel()
    lines = [re.search(r"restores snapshot .*: (\d+) of (\d+) chunks read, (\d+) entries", line)
             for member in range(2) for line in (tmp_path / f"member-{member}.log").read_text().splitlines()]
    reads = [tuple(map(int, found.groups())) for found in lines if found]
    assert len(reads) == 2, reads  # one restore per member
    for chunks_read, chunks, entries in reads:
        assert chunks_read < 0.6 * chunks
        assert entries < 0.6 * keys
    assert sum(entries for _, _, entries in reads) >= keys
