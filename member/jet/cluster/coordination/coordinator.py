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
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Mapping

import cloudpickle

from jet.cluster.links import messages
from jet.cluster.coordination.job_control import JobControl
from jet.cluster.coordination.execution_driver import (CLIENT_TASKLET, EXECUTION_DONE_STATE, EXECUTION_RUNNING_STATE,
                                          ExecutionDriver)
from jet.cluster.executions.job_execution import ExecutionOutcome
from jet.cluster.coordination.job_history import FinishedJobs, UnknownJobError
from jet.cluster.coordination.job_restarts import Next, decide
from jet.cluster.coordination.job_state import (Execution, JobConfigError, JobRecord, JobRun, JobStatus, Termination,
                                   new_job_id)
from jet.cluster.coordination.job_store import JobStore, record_from_store
from jet.cluster.executions.observables import ObservableStore, UnknownObservableError
from jet.cluster.coordination.scale_up import JobScaling, ScaleUpTimer
from jet.cluster.executions.control_settings import ControlSettings
from jet.core.dag import DAG, DagValidationError
from jet.execution.measurements import PackedMeasurements, unpack_measurements
from jet.execution.vertex_metrics import merge_vertex_metrics
from jet.job_config import JobConfig

__all__ = ["JobCoordinator", "JobRecord", "JobStatus", "EXECUTION_DONE_STATE", "EXECUTION_RUNNING_STATE"]

log = logging.getLogger("jet.cluster.coordination.coordinator")

MemberCall = Callable[[int, str, bytes, float], bytes]
"""``call(member, message type, payload, timeout_s) -> reply``; raises when the member cannot answer."""
StartCall = Callable[[int, str, bytes, float], Future]
"""The same call started: returns at once the future of its reply."""


class JobCoordinator(JobControl, ExecutionDriver, JobScaling):
    """Coordinates every job of the cluster; lives on member 0."""

    def __init__(self, member_count: int, call_member: MemberCall, *, start_call: StartCall | None = None,
                 cooperative_threads: int = 1, on_status: Callable[[JobRecord], None] | None = None,
                 control: ControlSettings | None = None, clock: Callable[[], float] = time.time,
                 job_store: JobStore | None = None) -> None:
        """``call_member(member, message type, payload, timeout_s)`` answers a control call;
        ``start_call`` (same arguments) starts one and returns the future of its answer, so
        calls to every member need no thread each (default: ``call_member`` on this
        coordinator's pool)."""
        self.member_count = member_count
        self._call = call_member
        self._pool = (None if start_call is not None
                      else ThreadPoolExecutor(max_workers=max(4, 2 * member_count), thread_name_prefix="jet-coord"))
        self._start_call = start_call or (lambda *call: self._pool.submit(call_member, *call))
        self._threads = cooperative_threads
        self._on_status = on_status
        self.control = control or ControlSettings()
        self._clock = clock
        self.job_store = job_store or JobStore(None)
        self._changed = threading.Condition()
        self._jobs: dict[str, JobRun] = {}
        self._finished = FinishedJobs(self.control.max_finished_jobs, self.control.finished_job_ttl_s, clock)
        self._latest: str | None = None
        self._lost: dict[int, str] = {}
        self._shut_down = False
        self.observables = ObservableStore()
        """The buffers of the jobs' observable sinks."""
        self._scale_up = ScaleUpTimer(self.control.scale_up_delay_ms, self._scale_up_jobs)

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
        record = JobRecord(job_id, job_config.name or job_id, submission_time=self._clock(), config=job_config)
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
            log.info("job %s (%s) found in the snapshot store: %s from snapshot %d", record.job_id, record.name,
                     "stays suspended" if record.status.is_suspended else "resumes",
                     stored.last_good_snapshot_id)
            self._launch(JobRun(record, dag, stored.dag))
            resumed.append(record.job_id)
        return resumed

    def _launch(self, run: JobRun) -> None:
        with self._changed:
            self._jobs[run.record.job_id] = run
            self._latest = run.record.job_id
        self._notify(run.record)
        threading.Thread(target=self._run, args=(run,), name=f"jet-job-{run.record.job_id}", daemon=True).start()

    def reject(self, name: str, error: BaseException) -> str:
        """Record a job that could not be built (its file raised, its pipeline or DAG is bad) as
        FAILED with the user's traceback, so the client, /job and the operator report it."""
        job_id = new_job_id()
        outcome = ExecutionOutcome.of_failure(job_id, 0, 0, error)
        now = self._clock()
        record = JobRecord(job_id, name, status=JobStatus.FAILED, submission_time=now, completion_time=now,
                           failure=ExecutionOutcome(**{**outcome.to_header(), "tasklet": "building the job"}))
        with self._changed:
            self._jobs[job_id] = JobRun(record, DAG(), b"")
            self._latest = job_id
            self._forget(self._finished.add(job_id, now))
            self._changed.notify_all()
        log.error("job %s could not be built: %s", name, record.message)
        self._notify(record)
        return job_id

    def record(self, job_id: str) -> JobRecord:
        """The job's record; :class:`UnknownJobError` naming the id when unknown or forgotten."""
        return self._run_of(job_id).record

    def records(self) -> list[JobRecord]:
        """Every job kept, oldest first."""
        with self._changed:
            self._forget(self._finished.expired())
            return sorted((run.record for run in self._jobs.values()), key=lambda r: r.submission_time)

    def latest(self) -> JobRecord | None:
        """The most recently submitted job, while it is kept."""
        with self._changed:
            self._forget(self._finished.expired())
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
            self._forget(self._finished.expired())
            run = self._jobs.get(job_id)
        if run is None:
            raise UnknownJobError(f"unknown job {job_id!r}: it was never submitted to this coordinator or "
                                  f"is no longer kept (the coordinator keeps {self._finished.describe()})")
        return run

    def _forget(self, job_ids: list[str]) -> None:
        """Drop finished jobs and their results (the caller holds the condition)."""
        for job_id in job_ids:
            self._jobs.pop(job_id, None)
            self.observables.forget(job_id)
            log.info("job %s is forgotten (the coordinator keeps %s)", job_id, self._finished.describe())

    # -- member side ------------------------------------------------------------------------
    def results(self, job_id: str) -> dict[str, list]:
        """The job's named results (``Context.results`` of every member of its last execution)."""
        run = self._run_of(job_id)
        merged: dict[str, list] = {}
        with self._changed:
            execution = run.execution
            for member in sorted(execution.results if execution else ()):
                for name, items in execution.results[member].items():
                    merged.setdefault(name, []).extend(items)
        return merged

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
                reply = self._call(member, messages.EXECUTION_METRICS, payload, self._call_timeout_s)
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
            self._fail_execution(run, execution, outcome)

    def on_member_lost(self, member: int, error: BaseException | str) -> None:
        """A member's connection broke: every running execution fails; each job then restarts,
        suspends or fails as :func:`~jet.cluster.coordination.job_restarts.decide` says."""
        with self._changed:
            self._lost.setdefault(member, str(error))
            hit = [(run, run.execution) for run in self._jobs.values()
                   if run.execution is not None and member in run.execution.members
                   and run.record.status in (JobStatus.STARTING, JobStatus.RUNNING)]
            for _, execution in hit:
                execution.lost.add(member)
                execution.awaiting.discard(member)
            self._changed.notify_all()
        for run, execution in hit:
            self._fail_execution(run, execution, self._lost_outcome(run, member, str(error)))

    def on_member_joined(self, member: int) -> None:
        """A lost member is back: jobs waiting for it may restart, and jobs with
        ``auto_scaling`` that run without it scale up after ``scale_up_delay_ms``."""
        with self._changed:
            if self._lost.pop(member, None) is not None:
                log.info("member %d rejoined the cluster", member)
            self._changed.notify_all()
        self._scale_up.member_joined()

    def shutdown(self) -> None:
        """Stop coordinating: the jobs are left as they are (their records stay in the store for
        the next coordinator); nothing more is committed or decided."""
        with self._changed:
            self._shut_down = True
            runs = list(self._jobs.values())
            self._changed.notify_all()
        self._scale_up.stop()
        for run in runs:
            execution = run.execution
            if execution is not None and execution.snapshots is not None:
                execution.snapshots.stop()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the job thread ----------------------------------------------------------------------
    def _run(self, run: JobRun) -> None:
        record = run.record
        try:
            go_on = not record.status.is_suspended or self._stay_suspended(run, record.suspension_cause)
            while go_on and not self._shut_down:
                self._execute(run)
                go_on = not self._shut_down and self._after_execution(run)
        except Exception as e:  # noqa: BLE001 - a coordinator bug must still end the job
            if self._shut_down:  # its calls are refused now; the job stays as the store has it
                log.debug("job %s: coordination stopped with the coordinator: %s", record.job_id, e)
                return
            log.exception("coordinating job %s failed", record.job_id)
            record.failure = record.failure or ExecutionOutcome(
                record.job_id, run.execution_id, 0, ok=False, error=f"{type(e).__name__}: {e}",
                tasklet="coordinator")
        finally:
            if not self._shut_down:
                self._finish(run)

    def _after_execution(self, run: JobRun) -> bool:
        """Act on how the execution ended; True to run another one."""
        record, execution = run.record, run.execution
        with self._changed:
            requested, run.requested = run.requested, None
            restart_cause, run.restart_cause = run.restart_cause, ""
        decision = decide(record.config, requested, execution.failure, execution.lost, restart_cause)
        if decision.next is Next.COMPLETE:
            return False
        if decision.next is Next.FAIL:
            record.failure = execution.failure or self._client_outcome(run, "the job was cancelled by the client")
            return False
        if decision.next is Next.SUSPEND:
            return self._stay_suspended(run, decision.cause)
        if decision.next is Next.RESTART_AFTER_REJOIN_WAIT:
            with self._changed:
                record.status = JobStatus.NOT_RUNNING
            self._status_changed(record)
            missing = self._await_rejoin(run, execution)
            with self._changed:
                requested, run.requested = run.requested, None
            if requested in (Termination.CANCEL, Termination.CANCEL_AND_EXPORT):
                record.failure = self._client_outcome(run, "the job was cancelled by the client")
                return False
            if requested is Termination.SUSPEND:
                return self._stay_suspended(run, "suspended by the client")
            if missing and decision.suspend_if_not_whole:
                return self._stay_suspended(run, f"{decision.cause}; the cluster was not whole again within "
                                                  f"{self.control.member_rejoin_timeout_ms} ms")
            if missing:
                log.warning("job %s goes on without member(s) %s, not back within %d ms (auto-scaling)",
                            record.job_id, missing, self.control.member_rejoin_timeout_ms)
            time.sleep(self.control.restart_delay_ms / 1000)
        record.restarts += 1
        record.last_restart_cause = decision.cause
        log.info("job %s: restart %d (%s)", record.job_id, record.restarts, decision.cause)
        return True

    def _await_rejoin(self, run: JobRun, execution: Execution) -> list[int]:
        """Wait up to ``member_rejoin_timeout_ms`` for the members ``execution`` lost to rejoin
        (a request or the coordinator's shutdown ends it early); those still missing."""
        def missing() -> list[int]:
            return sorted(m for m in execution.lost if m in self._lost)

        with self._changed:
            self._changed.wait_for(lambda: not missing() or run.requested is not None or self._shut_down,
                                   self.control.member_rejoin_timeout_ms / 1000)
            return missing()

    def _stay_suspended(self, run: JobRun, cause: str) -> bool:
        """SUSPENDED until a resume (True) or a cancel (False)."""
        record = run.record
        with self._changed:
            record.status = JobStatus.SUSPENDED
            record.suspension_cause = cause
            run.resume_requested = False
        self._status_changed(record)
        log.info("job %s is suspended: %s", record.job_id, cause)
        with self._changed:
            self._changed.wait_for(lambda: run.resume_requested or run.requested is not None or self._shut_down)
            resumed, run.resume_requested = run.resume_requested, False
            cancelled = run.requested in (Termination.CANCEL, Termination.CANCEL_AND_EXPORT)
            run.requested = None
            record.suspension_cause = ""
        if cancelled or self._shut_down:
            record.failure = self._client_outcome(run, "the job was cancelled by the client")
            return False
        log.info("job %s resumes", record.job_id)
        return resumed

    def _finish(self, run: JobRun) -> None:
        record = run.record
        with self._changed:
            record.status = JobStatus.FAILED if record.failure is not None else JobStatus.COMPLETED
            record.completion_time = self._clock()
            run.dag_bytes = None  # the DAG stays while the job is kept: its dashboard page draws it
            self.job_store.update(record)  # gone from the store before anyone sees the job ended
            self._forget(self._finished.add(record.job_id, record.completion_time))
            self._changed.notify_all()
        self.observables.wake()
        log.info("job %s %s in %.2f s", record.job_id, record.status.value,
                 record.completion_time - (record.start_time or record.submission_time))
        self._notify(record)

    def _lost_outcome(self, run: JobRun, member: int, error: str) -> ExecutionOutcome:
        return ExecutionOutcome(run.record.job_id, run.execution_id, member, ok=False,
                                error=f"MemberLostError: member {member} was lost: {error}",
                                tasklet=f"connection to member {member}")

    def _client_outcome(self, run: JobRun, what: str) -> ExecutionOutcome:
        return ExecutionOutcome(run.record.job_id, run.execution_id, 0, ok=False, cancelled=True,
                                error=f"JobCancelledError: {what}", tasklet=CLIENT_TASKLET)

    def _status_changed(self, record: JobRecord) -> None:
        self.job_store.update(record)
        self._notify(record)

    def _notify(self, record: JobRecord) -> None:
        if self._on_status is not None:
            try:
                self._on_status(record)
            except Exception:  # noqa: BLE001
                log.exception("job status listener failed")
