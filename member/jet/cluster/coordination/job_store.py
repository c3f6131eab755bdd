"""The coordinator's job records in the snapshot store, so a restarted coordinator resumes its jobs.

Every job is *kept* when the cluster has a store: at submission its record (pickled DAG, config,
status) is written; every status change,
restart and snapshot updates it; COMPLETED or FAILED delete it with its snapshot slots (exports
stay). Every change to a record goes through this object's lock, so a snapshot's commit (which
rewrites the record) never races a status update. Snapshot ids rise by one across a job's
executions and across coordinators: the next id continues from the record.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from jet.cluster.coordination.job_state import JobConfigError, JobRecord, JobStatus, SnapshotStats
from jet.cluster.executions.outcome import FailureKind
from jet.job_config import JobConfig
from jet.snapshot import SnapshotError, SnapshotInfo, SnapshotStore, SnapshotWriter
from jet.snapshot.records import JobRecord as StoredJob

log = logging.getLogger("jet.cluster.coordination.job_store")


class JobStore:
    """Job records and snapshots of the jobs this coordinator keeps (nothing without a store)."""

    def __init__(self, store: SnapshotStore | None) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._kept: set[str] = set()
        self._next_snapshot_id: dict[str, int] = {}

    def check(self, config: JobConfig) -> None:
        """Refuse a config this cluster cannot run: :class:`JobConfigError` saying why."""
        if self.store is None:
            if config.processing_guarantee.snapshots:
                raise JobConfigError(
                    f"processing_guarantee {config.processing_guarantee.value} needs a snapshot store, and this "
                    "cluster has none: start the members with snapshot_store (JET_SNAPSHOT_STORE, a directory or "
                    "a URL such as s3://bucket/prefix), or submit with processing_guarantee NONE")
            if config.initial_snapshot_name:
                raise JobConfigError(f"initial_snapshot_name {config.initial_snapshot_name!r}: this cluster has "
                                     "no snapshot store to read it from (set snapshot_store on the members)")
            return
        if config.initial_snapshot_name:
            try:
                self.store.export_info(config.initial_snapshot_name)
            except SnapshotError as e:
                raise JobConfigError(f"initial_snapshot_name {config.initial_snapshot_name!r}: {e}") from None

    def keeps(self, job_id: str) -> bool:
        return job_id in self._kept

    def create(self, record: JobRecord, dag_bytes: bytes) -> None:
        """Write a new job's record when the cluster has a store: every job is kept while it runs,
        so a restarted coordinator runs it again (from its last snapshot; from the start without
        a guarantee, as Jet restarts such a job after a topology change) rather than lose it."""
        config = record.config
        if self.store is None:
            return
        stored = StoredJob(job_id=record.job_id, name=record.name, creation_time=record.submission_time,
                           dag=dag_bytes, config=config.to_dict(), status=record.status.value)
        with self._lock:
            self.store.save_job_record(stored)
            self._kept.add(record.job_id)
            self._next_snapshot_id[record.job_id] = 0

    def adopt(self, stored: StoredJob) -> None:
        """Keep a record found in the store (a restarted coordinator resumes its job)."""
        with self._lock:
            self._kept.add(stored.job_id)
            self._next_snapshot_id[stored.job_id] = max(stored.last_good_snapshot_id, stored.ongoing_snapshot_id) + 1

    def update(self, record: JobRecord) -> None:
        """Write the record's status, restarts and snapshot figures; a terminal status deletes the
        job's record and snapshot slots (its exports stay)."""
        if record.job_id not in self._kept:
            return
        with self._lock:
            try:
                if record.status.is_terminal and record.failure is not None \
                        and record.failure.kind is FailureKind.SNAPSHOT_DAMAGED:
                    log.warning("job %s ended with a snapshot it could not restore; its record and snapshots "
                                "stay in the store (%s)", record.job_id, self.store.url)
                    self._kept.discard(record.job_id)
                    return
                if record.status.is_terminal:
                    self.store.delete_job(record.job_id)
                    self._kept.discard(record.job_id)
                    self._next_snapshot_id.pop(record.job_id, None)
                    return
                stored = self.store.load_job_record(record.job_id)
                stored.status = record.status.value
                stored.restarts = record.restarts
                stored.last_restart_cause = record.last_restart_cause
                stored.suspension_cause = record.suspension_cause
                stored.snapshot_stats = record.snapshots.to_dict()
                self.store.save_job_record(stored, with_dag=False)
            except (OSError, SnapshotError) as e:
                log.warning("job %s: its record in the snapshot store could not be updated to %s: %s",
                            record.job_id, record.status.value, e)

    def has_record(self, job_id: str) -> bool:
        """Whether the store holds an unfinished job of this id (one this coordinator may resume)."""
        if self.store is None:
            return False
        try:
            self.store.load_job_record(job_id)
        except SnapshotError:
            return False
        return True

    def stored_jobs(self) -> list[StoredJob]:
        """The records in the store, oldest first (a damaged one is logged and left out)."""
        if self.store is None:
            return []
        records = []
        for job_id in self.store.list_jobs():
            try:
                records.append(self.store.load_job_record(job_id))
            except SnapshotError as e:
                log.warning("a job record in the snapshot store cannot be read and is left alone: %s", e)
        return sorted(records, key=lambda stored: stored.creation_time)

    # -- snapshots -----------------------------------------------------------------------------
    def next_snapshot_id(self, job_id: str) -> int:
        """The id the job's next snapshot will have (what a new execution is told to expect)."""
        with self._lock:
            return self._next_snapshot_id.get(job_id, 0)

    def begin_snapshot(self, job_id: str) -> SnapshotWriter:
        """The next snapshot of the job (id one above the previous attempt), in the free slot."""
        with self._lock:
            snapshot_id = self._next_snapshot_id.get(job_id, 0)
            writer = self.store.begin_snapshot(job_id, snapshot_id)
            self._next_snapshot_id[job_id] = snapshot_id + 1
            return writer

    def commit(self, writer: SnapshotWriter, stats: dict[str, Any]) -> SnapshotInfo:
        """The commit point: the snapshot becomes the job's last good one."""
        with self._lock:
            return writer.commit(stats)

    def restore_point(self, record: JobRecord) -> dict[str, Any] | None:
        """Where a new execution starts: the job's last good snapshot, else its initial snapshot,
        else nothing (from scratch). The snapshot is verified first, every chunk read and checked
        (``SnapshotError`` naming the snapshot and what is wrong: nothing is restored from it)."""
        if self.store is None:
            return None
        if record.job_id in self._kept:
            with self._lock:
                stored = self.store.load_job_record(record.job_id)
            if stored.last_good_snapshot_id >= 0:
                self.store.verify(record.job_id, stored.last_good_snapshot_id, stored.last_good_slot)
                return {"job_id": record.job_id, "snapshot_id": stored.last_good_snapshot_id,
                        "slot": stored.last_good_slot}
        if record.config.initial_snapshot_name:
            self.store.verify_export(record.config.initial_snapshot_name)
            return {"export": record.config.initial_snapshot_name}
        return None

    def restore_older_snapshot(self, job_id: str) -> SnapshotInfo:
        """Make the job's older snapshot (in its other slot) its last good one, verified; the
        explicit fall-back when the last good one is damaged (docs/fault-tolerance.md)."""
        if self.store is None or job_id not in self._kept:
            raise SnapshotError(f"job {job_id} keeps no snapshots in a store")
        with self._lock:
            info = self.store.restore_older_snapshot(job_id)
            self._next_snapshot_id[job_id] = max(self._next_snapshot_id.get(job_id, 0), info.snapshot_id + 1)
        log.warning("job %s: its last good snapshot is now the older snapshot %d (slot %d)", job_id,
                    info.snapshot_id, info.slot)
        return info

    def export(self, job_id: str, name: str) -> SnapshotInfo:
        """Copy the job's last good snapshot to the export ``name``."""
        with self._lock:
            return self.store.export(job_id, name)

    def delete_export(self, name: str) -> None:
        """Delete the export ``name`` (``SnapshotError`` naming it when there is none)."""
        if self.store is None:
            raise SnapshotError(f"there is no snapshot store, so no exported snapshot {name!r} to delete")
        with self._lock:
            if name not in self.store.list_exports():
                raise SnapshotError(f"no exported snapshot named {name!r} in {self.store.url}")
            self.store.delete_export(name)
        log.info("exported snapshot %r deleted", name)

    def exports(self) -> list[dict[str, Any]]:
        """Every complete export with its figures."""
        if self.store is None:
            return []
        listed = []
        for name in self.store.list_exports():
            try:
                info = self.store.export_info(name)
            except SnapshotError as e:
                log.warning("export %r cannot be read: %s", name, e)
                continue
            listed.append({"name": name, "jobId": info.job_id, "jobName": info.job_name,
                           "snapshotId": info.snapshot_id, "bytes": info.num_bytes, "keys": info.num_keys,
                           "chunks": info.chunk_count, "created": info.created})
        return listed


def record_from_store(stored: StoredJob) -> JobRecord:
    """The coordinator's record of a job read back from the store."""
    status = JobStatus(stored.status) if stored.status in JobStatus.__members__ else JobStatus.NOT_RUNNING
    if status is JobStatus.SUSPENDED_EXPORTING_SNAPSHOT:
        status = JobStatus.SUSPENDED
    return JobRecord(stored.job_id, stored.name or stored.job_id, status=status,
                     submission_time=stored.creation_time, config=JobConfig.of(stored.config),
                     restarts=stored.restarts, last_restart_cause=stored.last_restart_cause,
                     suspension_cause=stored.suspension_cause,
                     snapshots=SnapshotStats.from_dict(stored.snapshot_stats))
