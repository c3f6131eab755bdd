"""A damaged or missing last snapshot: the job is suspended naming it, its store's data stays,
and it resumes from the snapshot before it only when asked (on real member processes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jet
from jet.cluster.coordination.job_state import JobStatus
from jet.snapshot import SnapshotError
from tests.cluster.cluster_support import wait_until
from tests.cluster.snapshot_support import counting_dag

TOTAL = 6000


def last_good_chunks(store: Path, job_id: str) -> list[Path]:
    record = json.loads((store / "jobs" / job_id / "record.json").read_text())
    directory = store / "jobs" / job_id / "snapshots" / str(record["last_good_slot"]) / str(
        record["last_good_snapshot_id"]) / "chunks"
    return sorted(directory.iterdir())


def damage_flipping_a_byte(chunk: Path) -> None:
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [damage_flipping_a_byte, Path.unlink], ids=["a-flipped-byte", "a-missing-chunk"])
def test_a_damaged_last_snapshot_suspends_the_job_and_the_older_one_resumes_it_exactly(tmp_path, damage):
    """The job failed in a quarter of a second and its record and both slots were deleted."""
    store = tmp_path / "store"
    with jet.local_cluster(members=2, snapshot_store=str(store)) as cluster:
        job = cluster.new_job(counting_dag(TOTAL, per_call=10, pause_s=0.02),
                              {"processing_guarantee": "exactly_once", "snapshot_interval_ms": 200})
        wait_until(lambda: job.info()["snapshotCount"] >= 3, what="three snapshots")
        job.suspend()
        chunks = last_good_chunks(store, job.id)
        damage(chunks[0])

        job.resume()
        wait_until(lambda: job.status is JobStatus.SUSPENDED and job.info()["suspensionCause"],
                   what="suspended again, naming the damage")
        message = job.info()["message"]
        assert chunks[0].name in message and ("damaged" in message or "missing" in message), message
        assert f"snapshot {job.info()['lastSnapshot']['id']}" in message and "--older-snapshot" in message, message
        assert (store / "jobs" / job.id / "record.json").exists()  # nothing of the job was deleted
        assert {p.name for p in (store / "jobs" / job.id / "snapshots").iterdir()} == {"0", "1"}

        job.resume(older_snapshot=True)  # the explicit fall-back
        job.join(timeout=120)
        # The older snapshot's sink state and source positions, then the rest: each number once.
        assert sorted(job.result()) == list(range(TOTAL))


def test_resuming_from_an_older_snapshot_that_is_not_there_is_refused(tmp_path):
    store = tmp_path / "store"
    with jet.local_cluster(members=1, snapshot_store=str(store)) as cluster:
        job = cluster.new_job(counting_dag(TOTAL, per_call=10, pause_s=0.02),
                              {"processing_guarantee": "exactly_once", "snapshot_interval_ms": 60_000})
        wait_until(lambda: job.status is JobStatus.RUNNING, what="RUNNING")
        job.suspend()  # its terminal snapshot is its first: no older one
        with pytest.raises(SnapshotError, match="no older complete snapshot"):
            job.resume(older_snapshot=True)
        job.cancel()
