"""Job coordination on member 0 (Jet's master): executions, their failures, restarts and suspension.

A job runs as one execution after another (the states are in :mod:`jet.cluster.coordination.job_state`): a new
execution id, ``init`` to every member (with the snapshot to restore, if any; each member starts
its part within it), snapshots on schedule once all are initialised
(:mod:`jet.cluster.coordination.snapshot_coordinator`), then every member's outcome. The first failure
cancels the execution on every other member; when it has ended everywhere, :func:`jet.cluster.coordination.job_restarts.decide` says what follows: done, failed,
restarted (a lost member: once it is back, or with ``auto_scaling`` after
``member_rejoin_timeout_ms`` on the members that are up; from the last good snapshot) or
suspended. A job with ``auto_scaling`` runs on the members that are up; when members join, jobs
that run on fewer restart gracefully on all after ``scale_up_delay_ms`` (:mod:`jet.cluster.coordination.scale_up`).
Every wait has a bound from :class:`ControlSettings` and a named outcome: a member that does not
answer ``init`` (``init_timeout_ms``) or another call (``control_timeout_ms``) fails the execution
naming it; a running member silent for ``report_wait_ms`` is asked for its execution's
state: still running, the wait goes on; finished, its lost report is taken from the answer; no
answer, the execution fails naming it. After a failure the members get ``cancel_grace_ms`` to
report. Jobs with a guarantee are kept in the snapshot store (:mod:`jet.cluster.coordination.job_store`), so a
restarted coordinator resumes them. Finished jobs are kept as :class:`FinishedJobs` says.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping

import cloudpickle

from jet.cluster.coordination.context import CoordinationContext, MemberCall, StartCall, lost_member_outcome
from jet.cluster.coordination.execution_driver import EXECUTION_DONE_STATE, EXECUTION_RUNNING_STATE, fail_execution
from jet.cluster.coordination.job_control import JobControl
from jet.cluster.coordination.job_history import FinishedJobs, JobResumingError, UnknownJobError
from jet.cluster.coordination.job_lifecycle import JobLifecycle
from jet.cluster.coordination.job_state import JobConfigError, JobRecord, JobRun, JobStateError, JobStatus, new_job_id
from jet.cluster.coordination.job_store import JobStore, record_from_store
from jet.cluster.coordination.scale_up import JobScaling, ScaleUpTimer
from jet.cluster.executions.control_settings import ControlSettings
from jet.cluster.executions.observables import ObservableStore, UnknownObservableError
from jet.cluster.executions.outcome import ExecutionOutcome, PickledResults, merge_results
from jet.cluster.links import messages
from jet.core.dag import DAG, DagValidationError
from jet.execution.gc_tuning import return_freed_memory_soon
from jet.execution.measurements import PackedMeasurements, unpack_measurements
from jet.execution.vertex_metrics import merge_vertex_metrics
from jet.job_config import JobConfig

__all__ = ["JobCoordinator", "JobRecord", "JobStatus", "EXECUTION_DONE_STATE", "EXECUTION_RUNNING_STATE"]

log = logging.getLogger("jet.cluster.coordination.coordinator")


class JobCoordinator:
    """Coordinates every job of the cluster; lives on member 0. Made of objects given their
    collaborators: a :class:`~.context.CoordinationContext` they share, a
    :class:`~.job_lifecycle.JobLifecycle` per job (which makes an
    :class:`~.execution_driver.ExecutionDriver` per execution), :class:`~.job_control.JobControl`
    for a client's requests and :class:`~.scale_up.JobScaling`."""

    def __init__(self, member_count: int, call_member: MemberCall, *, start_call: StartCall | None = None,
                 cooperative_threads: int = 1, on_status: Callable[[JobRecord], None] | None = None,
                 control: ControlSettings | None = None, clock: Callable[[], float] = time.time,
                 job_store: JobStore | None = None) -> None:
        """``call_member(member, message type, payload, timeout_s)`` answers a control call;
        ``start_call`` (same arguments) starts one and returns the future of its answer, so
        calls to every member need no thread each (default: ``call_member`` on this
        coordinator's pool)."""
        self._pool = (None if start_call is not None
                      else ThreadPoolExecutor(max_workers=max(4, 2 * member_count), thread_name_prefix="jet-coord"))
        self._context = CoordinationContext(
            member_count, call_member, start_call or (lambda *call: self._pool.submit(call_member, *call)),
            cooperative_threads=cooperative_threads, control=control or ControlSettings(), clock=clock,
            job_store=job_store or JobStore(None), on_status=on_status)
        self._changed = self._context.changed
        self._jobs: dict[str, JobRun] = {}
        self._finished = FinishedJobs(self.control.max_finished_jobs, self.control.finished_job_ttl_s, clock)
        self._latest: str | None = None
        self._result_bytes: dict[str, int] = {}
        """The finished jobs whose results are kept, oldest first, and their size in bytes."""
        self._stored_jobs_taken = False
        """Whether the jobs of the store were taken over (until then a job of the store is
        answered as resuming, not unknown)."""
        self.observables = ObservableStore()
        """The buffers of the jobs' observable sinks."""
        self._requests = JobControl(self._context, self._jobs, self._run_of)
        self._scaling = JobScaling(self._context, self._jobs, self._requests.request)
        self._scale_up = ScaleUpTimer(self.control.scale_up_delay_ms, self._scaling.scale_up_jobs)

    @property
    def member_count(self) -> int:
        return self._context.member_count

    @property
    def control(self) -> ControlSettings:
        return self._context.control

    @property
    def job_store(self) -> JobStore:
        return self._context.job_store

    # -- a client's requests (see JobControl) ------------------------------------------------
    def find(self, job_id_or_name: str) -> JobRecord:
        """The job with this id, else the newest job of this name (an unfinished one first)."""
        return self._requests.find(job_id_or_name)

    def cancel(self, job_id: str) -> JobRecord:
        """Cancel the job everywhere; it ends FAILED with ``JobCancelledError``."""
        return self._requests.cancel(job_id)

    def suspend(self, job_id: str) -> JobRecord:
        """Suspend a running job (a terminal snapshot with a guarantee, else a cancel)."""
        return self._requests.suspend(job_id)

    def restart(self, job_id: str) -> JobRecord:
        """Stop the running execution (terminal snapshot) and start a new one from it."""
        return self._requests.restart(job_id)

    def resume(self, job_id: str, older_snapshot: bool = False) -> JobRecord:
        """Resume a suspended job from its last good snapshot (from scratch without one), or from
        the one before it (``older_snapshot``, see :meth:`JobControl.resume`)."""
        return self._requests.resume(job_id, older_snapshot)

    def export_snapshot(self, job_id: str, name: str, cancel: bool = False) -> dict[str, Any]:
        """Export the job's state as ``name`` (then cancel it, with ``cancel``); the export's figures."""
        return self._requests.export_snapshot(job_id, name, cancel)

    def snapshots(self) -> list[dict[str, Any]]:
        """The exported snapshots of the store with their figures."""
        return self._requests.snapshots()

    def delete_snapshot(self, name: str) -> None:
        """Delete the exported snapshot ``name`` (``SnapshotError`` when there is none)."""
        self._requests.delete_snapshot(name)

    def job_headers(self) -> list[dict[str, Any]]:
        """Every job kept, oldest first, as clients see them."""
        return [record.to_header() for record in self.records()]

    # -- client side -------------------------------------------------------------------------
    def submit(self, dag_bytes: bytes, config: Mapping[str, Any] | JobConfig | None = None) -> str:
        """Validate the DAG (``DagValidationError``) and the config (``JobConfigError``) before
        anything runs, keep the job's record when it has a guarantee, and start the job."""
        dag = cloudpickle.loads(dag_bytes)
        if not isinstance(dag, DAG):
            raise DagValidationError(f"a job needs a jet.core.DAG, got {type(dag).__name__}")
        dag.validate()
        try:
            job_config = JobConfig.of(config)
        except ValueError as e:
            raise JobConfigError(str(e)) from None
        self.job_store.check(job_config)
        job_id = new_job_id()
        record = JobRecord(job_id, job_config.name or job_id, submission_time=self._context.clock(), config=job_config)
        self.job_store.create(record, dag_bytes)
        self._launch(JobRun(record, dag, dag_bytes))
        return job_id

    def submit_or_resume(self, dag_bytes: bytes, config: Mapping[str, Any] | JobConfig | None = None) -> str:
        """Submit the job, unless a job of the same name is kept unfinished (in this coordinator
        or in the store): that one goes on (how a restarted member 0 with ``--pipeline`` continues)."""
        name = JobConfig.of(config).name
        if name:
            self.resume_stored_jobs()
            with self._changed:
                same = [run for run in self._jobs.values()
                        if run.record.name == name and not run.record.status.is_terminal]
            if same:
                log.info("job %s (%s) is kept unfinished; it goes on instead of a new submission",
                         same[-1].record.job_id, name)
                return same[-1].record.job_id
        return self.submit(dag_bytes, config)

    def resume_stored_jobs(self) -> list[str]:
        """Take over every unfinished job recorded in the snapshot store that this coordinator
        does not run yet: restart it from its last good snapshot (a SUSPENDED job stays so)."""
        resumed = []
        try:
            self._take_stored_jobs(resumed)
        finally:
            self._stored_jobs_taken = True
        return resumed

    def _take_stored_jobs(self, resumed: list[str]) -> None:
        for stored in self.job_store.stored_jobs():
            with self._changed:
                if stored.job_id in self._jobs:
                    continue
            try:
                dag = cloudpickle.loads(stored.dag)
            except Exception as e:  # noqa: BLE001 - a record this code cannot run: leave it
                log.warning("job %s (%s) in the snapshot store cannot be resumed: its DAG does not unpickle: %s",
                            stored.job_id, stored.name, e)
                continue
            record = record_from_store(stored)
            self.job_store.adopt(stored)
            if not record.status.is_suspended:
                record.status = JobStatus.NOT_RUNNING
                record.restarts += 1
                record.last_restart_cause = "the coordinator restarted"
            log.info("job %s (%s) found in the snapshot store: %s %s", record.job_id, record.name,
                     "stays suspended" if record.status.is_suspended else "resumes",
                     f"from snapshot {stored.last_good_snapshot_id}" if stored.last_good_snapshot_id >= 0
                     else "from the start")
            self._launch(JobRun(record, dag, stored.dag))
            resumed.append(record.job_id)

    def _launch(self, run: JobRun) -> None:
        with self._changed:
            self._jobs[run.record.job_id] = run
            self._latest = run.record.job_id
        self._context.notify(run.record)
        JobLifecycle(self._context, run, self._requests, self.on_execution_done, self._job_finished).start()

    def reject(self, name: str, error: BaseException) -> str:
        """Record a job that could not be built (its file raised, its pipeline or DAG is bad) as
        FAILED with the user's traceback, so the client, /job and the operator report it."""
        job_id = new_job_id()
        outcome = ExecutionOutcome.of_failure(job_id, 0, 0, error)
        now = self._context.clock()
        record = JobRecord(job_id, name, status=JobStatus.FAILED, submission_time=now, completion_time=now,
                           failure=ExecutionOutcome(**{**outcome.to_header(), "tasklet": "building the job"}))
        with self._changed:
            self._jobs[job_id] = JobRun(record, DAG(), b"")
            self._latest = job_id
            self._forget(self._finished.add(job_id, now))
            self._changed.notify_all()
        log.error("job %s could not be built: %s", name, record.message)
        self._context.notify(record)
        return job_id

    def record(self, job_id: str) -> JobRecord:
        """The job's record; :class:`UnknownJobError` naming the id when unknown or forgotten."""
        return self._run_of(job_id).record

    def records(self) -> list[JobRecord]:
        """Every job kept, oldest first."""
        with self._changed:
            self._expire()
            return sorted((run.record for run in self._jobs.values()), key=lambda r: r.submission_time)

    def latest(self) -> JobRecord | None:
        """The most recently submitted job, while it is kept."""
        with self._changed:
            self._expire()
            run = None if self._latest is None else self._jobs.get(self._latest)
        return None if run is None else run.record

    def wait(self, job_id: str, timeout_s: float) -> JobRecord:
        """Wait up to ``timeout_s`` for the job to end; returns its record either way."""
        record = self.record(job_id)
        with self._changed:
            self._changed.wait_for(lambda: record.status.is_terminal, timeout_s)
        return record

    def dag(self, job_id: str) -> DAG:
        """The job's DAG while the coordinator keeps the job (``UnknownJobError`` after)."""
        return self._run_of(job_id).dag

    def _run_of(self, job_id: str) -> JobRun:
        with self._changed:
            self._expire()
            run = self._jobs.get(job_id)
        if run is None:
            if not self._stored_jobs_taken and self.job_store.has_record(job_id):
                raise JobResumingError(f"job {job_id!r} is in the snapshot store of a coordinator that has just "
                                       "restarted; it resumes once the cluster is whole")
            raise UnknownJobError(f"unknown job {job_id!r}: it was never submitted to this coordinator or "
                                  f"is no longer kept (the coordinator keeps {self._finished.describe()})")
        return run

    def _expire(self) -> None:
        """Forget the finished jobs past the history's bounds and release the results fetched
        longer than ``fetched_result_ttl_s`` ago (the caller holds the condition)."""
        self._forget(self._finished.expired())
        fetched_before = self._context.clock() - self.control.fetched_result_ttl_s
        for job_id in list(self._result_bytes):
            fetched_at = self._jobs[job_id].results_fetched_at
            if fetched_at is not None and fetched_at <= fetched_before:
                self._release_results(job_id, f"fetched {self.control.fetched_result_ttl_s} s ago at least")

    def _forget(self, job_ids: list[str]) -> None:
        """Drop finished jobs and their results (the caller holds the condition)."""
        for job_id in job_ids:
            self._jobs.pop(job_id, None)
            self._result_bytes.pop(job_id, None)
            self.observables.forget(job_id)
            log.info("job %s is forgotten (the coordinator keeps %s)", job_id, self._finished.describe())

    # -- member side ------------------------------------------------------------------------
    def results(self, job_id: str) -> dict[str, list]:
        """The job's named results (``Context.results`` of every member of its last execution)."""
        return merge_results(self.fetch_results(job_id)[0])

    def fetch_results(self, job_id: str) -> tuple[list[PickledResults], bool]:
        """Every member's results of the job's last execution, pickled, in member order (a
        client merges them, :func:`merge_results`, so member 0 neither unpickles nor pickles
        them again), and whether they are final (the job had ended: a client may keep them, as
        they go ``fetched_result_ttl_s`` after this first fetch)."""
        run = self._run_of(job_id)
        with self._changed:
            if run.results_released:
                raise JobStateError(
                    f"the results of job {run.record.name} ({job_id}) were released: finished jobs keep "
                    f"{self.control.max_finished_result_bytes:,} bytes of results at most "
                    f"(max_finished_result_bytes), the oldest going first, and fetched results "
                    f"{self.control.fetched_result_ttl_s} s after their first fetch (fetched_result_ttl_s)")
            execution = run.execution
            per_member = dict(execution.results) if execution else {}
            final = run.record.status.is_terminal
            if final and run.results_fetched_at is None:
                run.results_fetched_at = self._context.clock()
                self._expire()  # with fetched_result_ttl_s 0, released once this reply has them
        return [results if isinstance(results, PickledResults) else PickledResults.of(results)
                for _, results in sorted(per_member.items())], final

    def observable_publish(self, job_id: str, name: str, capacity: int, items: list) -> None:
        """Items of a running job's observable sink (those of an ended or unknown job are dropped)."""
        with self._changed:
            run = self._jobs.get(job_id)
            if run is None or run.record.status.is_terminal:
                return
        self.observables.publish(job_id, name, capacity, items)

    def observable_read(self, job_id: str, name: str, from_sequence: int, max_items: int,
                        wait_s: float) -> tuple[list, dict[str, Any]]:
        """Items of an observable from ``from_sequence`` (waiting up to ``wait_s`` for one) and the
        reply header: ``next``, ``lost``, ``ended`` and, once ended, the job's record."""
        run = self._run_of(job_id)
        if name not in run.observable_names:
            raise UnknownObservableError(f"job {run.record.name} ({job_id}) has no observable named {name!r}; "
                                         f"its observables are {run.observable_names}")
        items, next_sequence, lost, ended = self.observables.read(
            job_id, name, from_sequence, max_items, wait_s, lambda: run.record.status.is_terminal)
        header: dict[str, Any] = {"next": next_sequence, "lost": lost, "ended": ended}
        if ended:
            header["job"] = run.record.to_header()
        return items, header

    def metrics(self, job_id: str) -> dict[str, dict[str, int]]:
        """Each vertex's figures over the cluster (counts summed, watermarks merged as
        :mod:`jet.execution.vertex_metrics` says): final figures of finished members, live
        counts asked from the others (a member that cannot answer is left out). A finished job's
        last figures stay as long as the job is kept (:class:`FinishedJobs`)."""
        return merge_vertex_metrics(self._per_member(job_id, "metrics").values())

    def measurements(self, job_id: str) -> list[dict]:
        """Every member's tagged measurements of the job's last execution (Jet's ``JobMetrics``,
        see :mod:`jet.execution.measurements`), in member order; kept like :meth:`metrics`."""
        per_member = self._per_member(job_id, "measurements")
        return [item for member in sorted(per_member) for item in unpack_measurements(per_member[member])]

    def _per_member(self, job_id: str, kind: str) -> dict[int, Any]:
        """``kind`` ("metrics" or "measurements") of the job's last execution per member: the
        final report of finished members, asked from the running ones."""
        run = self._run_of(job_id)
        with self._changed:
            execution = run.execution
            if execution is None:
                return {}
            final = execution.final_metrics if kind == "metrics" else execution.final_measurements
            per_member = dict(final)
            live = ([m for m in execution.awaiting if m not in per_member]
                    if run.record.status is JobStatus.RUNNING else [])
        payload = messages.encode_message({"execution_id": execution.id, "measurements": kind == "measurements"})
        for member in live:
            try:
                reply = self._context.call(member, messages.EXECUTION_METRICS, payload, self._context.call_timeout_s)
                per_member[member] = messages.decode_message(reply)[0][kind]
            except Exception as e:  # noqa: BLE001 - metrics are best effort
                log.debug("no %s from member %d: %s", kind, member, e)
        return per_member

    def on_execution_done(self, outcome: ExecutionOutcome, results: dict[str, list] | None = None,
                          metrics: dict[str, dict[str, int]] | None = None,
                          measurements: PackedMeasurements | bytes | None = None) -> None:
        """A member's execution ended (reported by the member, with its results and metrics;
        ``measurements`` packed, or as the report's JSON bytes, kept so until asked for)."""
        with self._changed:
            run = self._jobs.get(outcome.job_id)
            execution = None if run is None else run.execution
            if execution is None or execution.id != outcome.execution_id:
                log.warning("outcome of an unknown execution %s of job %s from member %d",
                            outcome.execution_id, outcome.job_id, outcome.member)
                return
            execution.awaiting.discard(outcome.member)
            if outcome.cleaned_up:
                execution.cleaned_up.add(outcome.member)
            execution.results[outcome.member] = results or {}
            execution.final_metrics[outcome.member] = metrics or {}
            execution.final_measurements[outcome.member] = measurements or {}
            self._changed.notify_all()
        if not outcome.ok:
            fail_execution(self._context, run, execution, outcome)

    def on_member_lost(self, member: int, error: BaseException | str) -> None:
        """A member's connection broke: every running execution fails; each job then restarts,
        suspends or fails as :func:`~jet.cluster.coordination.job_restarts.decide` says."""
        with self._changed:
            self._context.lost.setdefault(member, str(error))
            hit = [(run, run.execution) for run in self._jobs.values()
                   if run.execution is not None and member in run.execution.members
                   and run.record.status in (JobStatus.STARTING, JobStatus.RUNNING)]
            for _, execution in hit:
                execution.lost.add(member)
                execution.awaiting.discard(member)
            self._changed.notify_all()
        for run, execution in hit:
            fail_execution(self._context, run, execution, lost_member_outcome(run, member, str(error)))

    def on_member_joined(self, member: int) -> None:
        """A lost member is back: jobs waiting for it may restart, and jobs with
        ``auto_scaling`` that run without it scale up after ``scale_up_delay_ms``."""
        with self._changed:
            if self._context.lost.pop(member, None) is not None:
                log.info("member %d rejoined the cluster", member)
            self._changed.notify_all()
        self._scale_up.member_joined()

    def shutdown(self) -> None:
        """Stop coordinating: the jobs are left as they are (their records stay in the store for
        the next coordinator); nothing more is committed or decided."""
        with self._changed:
            self._context.shut_down = True
            runs = list(self._jobs.values())
            self._changed.notify_all()
        self._scale_up.stop()
        for run in runs:
            execution = run.execution
            if execution is not None and execution.snapshots is not None:
                execution.snapshots.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _job_finished(self, run: JobRun) -> None:
        """The job ended (its lifecycle set its final status): it is kept as FinishedJobs says,
        and its results while the finished jobs' results stay within ``max_finished_result_bytes``
        and until ``fetched_result_ttl_s`` after a client fetched them."""
        with self._changed:
            self._forget(self._finished.add(run.record.job_id, run.record.completion_time))
            execution = run.execution
            if run.record.job_id in self._jobs and execution is not None:
                self._result_bytes[run.record.job_id] = sum(
                    results.size_bytes for results in execution.results.values() if isinstance(results, PickledResults))
                self._release_oldest_results()
            self._expire()
        self.observables.wake()

    def _release_oldest_results(self) -> None:
        """Release the oldest finished jobs' results while they hold more than the bound (the
        caller holds the condition)."""
        while sum(self._result_bytes.values()) > self.control.max_finished_result_bytes and self._result_bytes:
            self._release_results(next(iter(self._result_bytes)), "max_finished_result_bytes")

    def _release_results(self, job_id: str, why: str) -> None:
        """Drop a finished job's results (the caller holds the condition)."""
        size = self._result_bytes.pop(job_id)
        run = self._jobs.get(job_id)
        if run is not None and run.execution is not None:
            run.execution.results.clear()
            run.results_released = True
            return_freed_memory_soon()
            log.info("job %s: its results (%d bytes) are released (%s)", job_id, size, why)
