"""What a client may ask of a job beyond submitting it (Jet's ``Job`` API), for the coordinator.

``suspend`` and ``restart`` take a terminal snapshot (the execution then ends by itself) when the
job has a guarantee, and cancel the execution when it has none (a resumed or restarted job then
starts from scratch, as Jet turns a graceful stop into a forceful one without a guarantee).
``cancel`` stops the job for good (FAILED, its record and snapshot slots deleted).
``export_snapshot`` takes a regular snapshot and copies it to a named export; on a suspended job
it exports the last good snapshot. ``cancel_and_export`` is a terminal snapshot exported, then a
cancel; when that snapshot fails the job is suspended instead, as Jet's javadoc says.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable, Mapping

from jet.cluster.coordination.context import CALL_SLACK_S, CoordinationContext, client_outcome
from jet.cluster.coordination.execution_driver import fail_execution
from jet.cluster.coordination.job_state import Execution, JobRecord, JobRun, JobStateError, JobStatus, Termination
from jet.cluster.coordination.snapshot_coordinator import SnapshotFailedError

log = logging.getLogger("jet.cluster.coordination.coordinator")


class JobControl:
    """A client's requests to the coordinator's jobs, given the coordination's shared parts, the
    jobs it keeps (id -> run, guarded by the context's condition) and how to find one by id
    (raising ``UnknownJobError``)."""

    def __init__(self, context: CoordinationContext, jobs: Mapping[str, JobRun],
                 run_of: Callable[[str], JobRun]) -> None:
        self._context = context
        self._jobs = jobs
        self._run_of = run_of

    def find(self, job_id_or_name: str) -> JobRecord:
        """The job with this id, else the newest job of this name (an unfinished one first)."""
        with self._context.changed:
            run = self._jobs.get(job_id_or_name)
            if run is None:
                named = sorted((r for r in self._jobs.values() if r.record.name == job_id_or_name),
                               key=lambda r: (not r.record.status.is_terminal, r.record.submission_time))
                run = named[-1] if named else None
        return (run if run is not None else self._run_of(job_id_or_name)).record

    def cancel(self, job_id: str) -> JobRecord:
        """Cancel the job everywhere; it ends FAILED with ``JobCancelledError``."""
        run = self._run_of(job_id)
        self.request(run, Termination.CANCEL, allowed=None)
        return run.record

    def suspend(self, job_id: str) -> JobRecord:
        """Suspend a running job (a terminal snapshot with a guarantee, else a cancel)."""
        run = self._run_of(job_id)
        self.request(run, Termination.SUSPEND, allowed=_ACTIVE)
        return run.record

    def restart(self, job_id: str) -> JobRecord:
        """Stop the running execution (terminal snapshot) and start a new one from it."""
        run = self._run_of(job_id)
        self.request(run, Termination.RESTART, allowed=(JobStatus.RUNNING,))
        return run.record

    def resume(self, job_id: str, older_snapshot: bool = False) -> JobRecord:
        """Resume a suspended job from its last good snapshot (from scratch without one); with
        ``older_snapshot``, from the one before it, kept in the job's other slot (when the last
        good one is damaged; exactly-once sinks then see again what they committed after it)."""
        run = self._run_of(job_id)
        with self._context.changed:
            if run.record.status is not JobStatus.SUSPENDED:
                raise JobStateError(f"job {run.record.name} ({job_id}) is {run.record.status.value}; only a "
                                    "SUSPENDED job can be resumed")
        if older_snapshot:
            info = self._context.job_store.restore_older_snapshot(job_id)
            log.warning("job %s resumes from its older snapshot %d: output that exactly-once sinks committed "
                        "after it will be produced again", job_id, info.snapshot_id)
        with self._context.changed:
            run.resume_requested = True
            self._context.changed.notify_all()
        return run.record

    def export_snapshot(self, job_id: str, name: str, cancel: bool = False) -> dict[str, Any]:
        """Export the job's state as ``name`` (then cancel it, with ``cancel``); the export's figures."""
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise ValueError(f"a snapshot name must be a non-empty string without '/', got {name!r}")
        run = self._run_of(job_id)
        record = run.record
        if not record.config.processing_guarantee.snapshots:
            raise JobStateError(f"job {record.name} ({job_id}) has processing guarantee NONE: it takes no "
                                "snapshots to export")
        with self._context.changed:
            status = record.status
            if status is JobStatus.SUSPENDED:
                record.status = JobStatus.SUSPENDED_EXPORTING_SNAPSHOT
        if status is JobStatus.SUSPENDED:
            self._context.notify(record)
            try:
                info = self._context.job_store.export(job_id, name)
            finally:
                with self._context.changed:
                    record.status = JobStatus.SUSPENDED
                self._context.notify(record)
            if cancel:
                self.request(run, Termination.CANCEL, allowed=None)
            return _export_header(name, info)
        mode = Termination.CANCEL_AND_EXPORT if cancel else None
        future = self.request(run, mode, allowed=(JobStatus.RUNNING,), export_name=name)
        if future is None:  # RUNNING, but its execution was just replaced (a restart)
            raise JobStateError(f"job {record.name} ({job_id}) is between two executions; export the snapshot "
                                f"again in a moment")
        timeout_s = 2 * self._context.control.snapshot_timeout_ms / 1000 + CALL_SLACK_S
        try:
            return _export_header(name, future.result(timeout=timeout_s))
        except SnapshotFailedError as e:
            raise JobStateError(f"job {record.name} ({job_id}): the snapshot to export as {name!r} failed: {e}") \
                from None

    def request(self, run: JobRun, mode: Termination | None, allowed: tuple[JobStatus, ...] | None,
                export_name: str | None = None) -> Future | None:
        """Record ``mode`` for the job thread and act on the running execution; ``allowed``: the
        statuses it may be asked in (None: any unfinished one). ``mode`` None is an export only."""
        record = run.record
        with self._context.changed:
            status = record.status
            if status.is_terminal or allowed is not None and status not in allowed:
                what = mode.value if mode else "export a snapshot of"
                raise JobStateError(f"cannot {what} job {record.name} ({record.job_id}): it is {status.value}")
            if mode is not None and run.requested not in (None, mode) and mode is not Termination.CANCEL:
                raise JobStateError(f"job {record.name} ({record.job_id}) is already being stopped "
                                    f"({run.requested.value})")
            if mode is not None:
                run.requested = mode
                run.export_name = export_name
            execution = run.execution if status is JobStatus.RUNNING else None
            self._context.changed.notify_all()
        if execution is None:
            if mode is Termination.CANCEL and run.execution is not None:  # STARTING: stop it at once
                fail_execution(self._context, run, run.execution,
                               client_outcome(run, "the job was cancelled by the client"))
            return None
        return self.terminate(run, execution, mode, export_name)

    def terminate(self, run: JobRun, execution: Execution, mode: Termination | None,
                  export_name: str | None) -> Future | None:
        """Act on a running execution: a snapshot (terminal unless an export only), else a cancel."""
        snapshots = execution.snapshots
        if mode is None and snapshots is None:
            raise JobStateError(f"job {run.record.name} ({run.record.job_id}) takes no snapshots to export")
        if mode is Termination.CANCEL or snapshots is None:
            fail_execution(self._context, run, execution, client_outcome(
                run, "the job was cancelled by the client" if mode in (Termination.CANCEL, None)
                else f"the client asked to {mode.value} the job"))
            return None
        future = snapshots.request(terminal=mode is not None, export_name=export_name)
        if mode is not None:
            future.add_done_callback(lambda done: self._terminal_snapshot_done(run, execution, mode, done))
        return future

    def _terminal_snapshot_done(self, run: JobRun, execution: Execution, mode: Termination, done: Future) -> None:
        """A terminal snapshot that failed: the execution is cancelled anyway (a failed
        cancel-and-export suspends the job instead of cancelling it)."""
        error = done.exception()
        if error is None:
            return
        log.warning("job %s: the terminal snapshot to %s failed (%s); the execution is cancelled",
                    run.record.job_id, mode.value, error)
        if mode is Termination.CANCEL_AND_EXPORT:
            with self._context.changed:
                run.requested = Termination.SUSPEND
        fail_execution(self._context, run, execution, client_outcome(
            run, f"the client asked to {mode.value} the job; its terminal snapshot failed"))

    def snapshots(self) -> list[dict[str, Any]]:
        """The exported snapshots of the store with their figures."""
        return self._context.job_store.exports()

    def delete_snapshot(self, name: str) -> None:
        """Delete an exported snapshot (a job's own snapshot slots go with the job)."""
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise ValueError(f"a snapshot name must be a non-empty string without '/', got {name!r}")
        self._context.job_store.delete_export(name)


_ACTIVE = (JobStatus.NOT_RUNNING, JobStatus.STARTING, JobStatus.RUNNING)


def _export_header(name: str, info: Any) -> dict[str, Any]:
    return {"name": name, "jobId": info.job_id, "snapshotId": info.snapshot_id, "bytes": info.num_bytes,
            "keys": info.num_keys, "chunks": info.chunk_count, "created": info.created}
