"""Job coordination on member 0 (Jet's master): submit, init everywhere, start, complete or fail.

A job's life (Jet's ``JobStatus``; a cancelled job ends FAILED with ``JobCancelledError``)::

    NOT_RUNNING  submitted and validated, the coordinator thread not yet started
    STARTING     a new execution id; ``init`` sent to every member
    RUNNING      every member initialised; ``start`` sent; waiting for every member's outcome
    COMPLETING   every member reported (or was lost, or the grace after a failure passed);
                 ``complete`` (cleanup) sent to every member
    COMPLETED    every member completed its execution
    FAILED       the first failure of any member, a lost member, or a cancel

The first failure cancels the execution on every other member, and the job result carries that
failure's text, traceback and member. Every wait has a bound from :class:`ControlSettings` and a
named outcome: a member that does not answer ``init`` (``init_timeout_ms``) or another call
(``control_timeout_ms``) fails the job naming it; a running member silent for ``report_wait_ms``
is asked for its execution's state: still running, the wait goes on; finished, its lost report
is taken from the answer; no answer, the job fails naming it. A lost member counts as that
member's failure, and after a failure the members get ``cancel_grace_ms`` to report before the
job is finalised anyway. Finished jobs are kept as :class:`FinishedJobs` says.
"""

from __future__ import annotations

import enum
import logging
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import cloudpickle

from jet.cluster import messages
from jet.cluster.distributed_plan import partition_owners
from jet.cluster.job_execution import ExecutionOutcome, PlanMessage, decode_report
from jet.cluster.job_history import FinishedJobs, UnknownJobError
from jet.cluster.observables import ObservableStore, UnknownObservableError, observable_names
from jet.cluster.settings import ControlSettings
from jet.core.dag import DAG, DagValidationError
from jet.execution.vertex_metrics import merge_vertex_metrics

log = logging.getLogger("jet.cluster.coordinator")

CALL_SLACK_S = 2.0
"""Beyond a call's own deadline, how long the coordinator waits for the thread making it (a call
to member 0 itself runs in place, with no transport deadline)."""
EXECUTION_DONE_STATE = "done"
EXECUTION_RUNNING_STATE = "running"
MemberCall = Callable[[int, str, bytes, float], bytes]
"""``call(member, message type, payload, timeout_s) -> reply``; raises when the member cannot answer."""


class JobStatus(enum.Enum):
    """Jet's job states (the first wave has no suspension)."""

    NOT_RUNNING = "NOT_RUNNING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in (JobStatus.COMPLETED, JobStatus.FAILED)


def _iso(timestamp: float | None) -> str | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


@dataclass
class JobRecord:
    """What the coordinator knows of one job; ``to_header()`` is what clients and ``/job`` see."""

    job_id: str
    name: str
    status: JobStatus = JobStatus.NOT_RUNNING
    submission_time: float = field(default_factory=time.time)
    start_time: float | None = None
    completion_time: float | None = None
    failure: ExecutionOutcome | None = None

    @property
    def message(self) -> str:
        """The failure with its traceback when FAILED, else empty."""
        if self.failure is None:
            return ""
        return (f"{self.failure.error} (on member {self.failure.member}, in {self.failure.tasklet or '?'})\n"
                f"{self.failure.traceback}")

    def to_header(self) -> dict[str, Any]:
        failure = self.failure
        return {"jobId": self.job_id, "name": self.name, "status": self.status.value,
                "message": self.message if self.status is JobStatus.FAILED else "",
                "submissionTime": _iso(self.submission_time), "startTime": _iso(self.start_time),
                "completionTime": _iso(self.completion_time),
                "failure": None if failure is None else failure.to_header()}


class _JobRun:
    """One job's coordination state, guarded by the coordinator's condition."""

    def __init__(self, record: JobRecord, dag: DAG, dag_bytes: bytes) -> None:
        self.record = record
        self.dag = dag
        self.dag_bytes = dag_bytes
        self.execution_id = 0
        self.awaiting: set[int] = set()
        """Members whose outcome of the current execution is still due."""
        self.initialised: set[int] = set()
        self.results: dict[int, dict[str, list]] = {}
        """Named results per member, from the members' outcome reports."""
        self.final_metrics: dict[int, dict[str, dict[str, int]]] = {}
        self.observable_names = observable_names(dag)
        """The names of the job's observable sinks."""


class JobCoordinator:
    """Coordinates every job of the cluster; lives on member 0."""

    def __init__(self, member_count: int, call_member: MemberCall, *, cooperative_threads: int = 1,
                 on_status: Callable[[JobRecord], None] | None = None,
                 control: ControlSettings | None = None, clock: Callable[[], float] = time.time) -> None:
        self.member_count = member_count
        self._call = call_member
        self._threads = cooperative_threads
        self._on_status = on_status
        self.control = control or ControlSettings()
        self._clock = clock
        self._changed = threading.Condition()
        self._jobs: dict[str, _JobRun] = {}
        self._finished = FinishedJobs(self.control.max_finished_jobs, self.control.finished_job_ttl_s, clock)
        self._latest: str | None = None
        self._lost: dict[int, str] = {}
        self.observables = ObservableStore()
        """The buffers of the jobs' observable sinks."""
        self._pool = ThreadPoolExecutor(max_workers=max(4, 2 * member_count), thread_name_prefix="jet-coord")

    # -- client side -------------------------------------------------------------------------
    def submit(self, dag_bytes: bytes, config: Mapping[str, Any] | None = None) -> str:
        """Validate the DAG (``DagValidationError`` before anything runs) and start the job."""
        dag = cloudpickle.loads(dag_bytes)
        if not isinstance(dag, DAG):
            raise DagValidationError(f"a job needs a jet.core.DAG, got {type(dag).__name__}")
        dag.validate()
        job_id = "-".join(f"{secrets.randbits(16):04x}" for _ in range(4))
        name = str((config or {}).get("name") or job_id)
        run = _JobRun(JobRecord(job_id, name, submission_time=self._clock()), dag, dag_bytes)
        with self._changed:
            self._jobs[job_id] = run
            self._latest = job_id
        self._notify(run.record)
        threading.Thread(target=self._run, args=(run,), name=f"jet-job-{job_id}", daemon=True).start()
        return job_id

    def reject(self, name: str, error: BaseException) -> str:
        """Record a job that could not be built (its file raised, its pipeline or DAG is bad) as
        FAILED with the user's traceback, so the client, /job and the operator report it."""
        job_id = "-".join(f"{secrets.randbits(16):04x}" for _ in range(4))
        outcome = ExecutionOutcome.of_failure(job_id, 0, 0, error)
        now = self._clock()
        record = JobRecord(job_id, name, status=JobStatus.FAILED, submission_time=now, completion_time=now,
                           failure=ExecutionOutcome(**{**outcome.to_header(), "tasklet": "building the job"}))
        with self._changed:
            self._jobs[job_id] = _JobRun(record, DAG(), b"")
            self._latest = job_id
            self._forget(self._finished.add(job_id, now))
            self._changed.notify_all()
        log.error("job %s could not be built: %s", name, record.message)
        self._notify(record)
        return job_id

    def record(self, job_id: str) -> JobRecord:
        """The job's record; :class:`UnknownJobError` naming the id when unknown or forgotten."""
        return self._run_of(job_id).record

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

    def cancel(self, job_id: str) -> JobRecord:
        """Cancel the job everywhere; it ends FAILED with ``JobCancelledError``."""
        run = self._run_of(job_id)
        self._fail(run, ExecutionOutcome(job_id, run.execution_id, 0, ok=False, cancelled=True,
                                         error="JobCancelledError: the job was cancelled by the client",
                                         tasklet=_CLIENT_TASKLET))
        return run.record

    def _run_of(self, job_id: str) -> _JobRun:
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
        """The job's named results (``Context.results`` of every member, in member order)."""
        run = self._run_of(job_id)
        merged: dict[str, list] = {}
        with self._changed:
            for member in sorted(run.results):
                for name, items in run.results[member].items():
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
        counts asked from the others (a member that cannot answer is left out)."""
        run = self._run_of(job_id)
        with self._changed:
            per_member = dict(run.final_metrics)
            live = [m for m in run.awaiting if m not in per_member] if run.record.status is JobStatus.RUNNING else []
        payload = messages.encode_message({"execution_id": run.execution_id})
        for member in live:
            try:
                reply = self._call(member, messages.EXECUTION_METRICS, payload, self._call_timeout_s)
                per_member[member] = messages.decode_message(reply)[0]["metrics"]
            except Exception as e:  # noqa: BLE001 - metrics are best effort
                log.debug("no metrics from member %d: %s", member, e)
        return merge_vertex_metrics(per_member.values())

    def on_execution_done(self, outcome: ExecutionOutcome, results: dict[str, list] | None = None,
                          metrics: dict[str, dict[str, int]] | None = None) -> None:
        """A member's execution ended (reported by the member, with its results and metrics)."""
        with self._changed:
            run = self._jobs.get(outcome.job_id)
            if run is None or run.execution_id != outcome.execution_id:
                log.warning("outcome of an unknown execution %s of job %s from member %d",
                            outcome.execution_id, outcome.job_id, outcome.member)
                return
            run.awaiting.discard(outcome.member)
            run.results[outcome.member] = results or {}
            run.final_metrics[outcome.member] = metrics or {}
            self._changed.notify_all()
        if not outcome.ok:
            self._fail(run, outcome)

    def on_member_lost(self, member: int, error: BaseException | str) -> None:
        """A member's connection broke: every active job fails, naming the member."""
        with self._changed:
            self._lost.setdefault(member, str(error))
            runs = [r for r in self._jobs.values() if not r.record.status.is_terminal]
            for run in runs:
                run.awaiting.discard(member)
            self._changed.notify_all()
        for run in runs:
            self._fail(run, self._lost_outcome(run, member, str(error)))

    def on_member_joined(self, member: int) -> None:
        """A member joined (again): jobs started from now on may run on it."""
        with self._changed:
            self._lost.pop(member, None)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the job thread ----------------------------------------------------------------------
    def _run(self, run: _JobRun) -> None:
        record = run.record
        try:
            self._execute(run)
        except Exception as e:  # noqa: BLE001 - a coordinator bug must still end the job
            log.exception("coordinating job %s failed", record.job_id)
            self._fail(run, ExecutionOutcome(record.job_id, run.execution_id, 0, ok=False,
                                             error=f"{type(e).__name__}: {e}", tasklet="coordinator"))
        finally:
            self._finish(run)

    @property
    def _call_timeout_s(self) -> float:
        return self.control.control_timeout_ms / 1000

    def _execute(self, run: _JobRun) -> None:
        record = run.record
        members = range(self.member_count)
        with self._changed:
            if run.record.failure is not None:
                return
            run.execution_id = secrets.randbits(63)
            record.status, record.start_time = JobStatus.STARTING, self._clock()
            lost = dict(self._lost)
        self._notify(record)
        log.info("starting job %s (%s), execution %d on %d members, DAG:\n%s", record.job_id, record.name,
                 run.execution_id, self.member_count, run.dag.to_dot(default_local_parallelism=self._threads))
        for member, error in lost.items():
            self._fail(run, self._lost_outcome(run, member, error))
        if record.failure is not None:
            return
        owners = partition_owners(self.member_count)
        init_s = self.control.init_timeout_ms / 1000
        inits = {m: self._pool.submit(self._call, m, messages.INIT, messages.encode_message(
            PlanMessage(record.job_id, run.execution_id, m, self.member_count, owners, record.name).to_header(),
            run.dag_bytes), init_s) for m in members}
        for member, future in inits.items():
            if self._call_ok(run, member, messages.INIT, future, init_s):
                run.initialised.add(member)
        with self._changed:
            if record.failure is not None:
                return
            record.status = JobStatus.RUNNING
            run.awaiting = {m for m in members if m not in self._lost}
        self._notify(record)
        starts = self._call_all(run, members, messages.START)
        for member, future in starts.items():
            self._call_ok(run, member, messages.START, future, self._call_timeout_s)
        self._await_reports(run)

    def _call_all(self, run: _JobRun, members, msg_type: str, extra: dict | None = None) -> dict[int, Future]:
        """``msg_type`` about the current execution to each of ``members``, concurrently."""
        payload = messages.encode_message({"job_id": run.record.job_id, "execution_id": run.execution_id,
                                           **(extra or {})})
        return {m: self._pool.submit(self._call, m, msg_type, payload, self._call_timeout_s) for m in members}

    def _await_reports(self, run: _JobRun) -> None:
        """Wait for every member's outcome; ask those silent for ``report_wait_ms`` for their state."""
        wait_s = self.control.report_wait_ms / 1000
        while True:
            with self._changed:
                if self._changed.wait_for(lambda: not run.awaiting or run.record.failure is not None, wait_s):
                    return
                silent = sorted(run.awaiting)
            log.info("job %s: no report from members %s for %.1f s; asking for their execution's state",
                     run.record.job_id, silent, wait_s)
            for member, future in self._call_all(run, silent, messages.EXECUTION_STATE).items():
                self._take_state(run, member, future)

    def _take_state(self, run: _JobRun, member: int, future: Future) -> None:
        """A still-running member is waited for; a finished one's report is taken from its answer;
        a member that cannot answer fails the job, named."""
        try:
            header, blob = messages.decode_message(future.result(timeout=self._call_timeout_s + CALL_SLACK_S))
        except Exception as e:  # noqa: BLE001 - a silent member: the job fails naming it
            self._fail(run, ExecutionOutcome(
                run.record.job_id, run.execution_id, member, ok=False,
                error=(f"MemberSilentError: member {member} sent no report of job {run.record.job_id} for "
                       f"{self.control.report_wait_ms} ms and did not answer when asked for the state of "
                       f"execution {run.execution_id}: {type(e).__name__}: "
                       f"{_describe(e, self._call_timeout_s)}"),
                tasklet=f"execution state on member {member}"))
            return
        if header.get("state") == EXECUTION_DONE_STATE:
            log.warning("job %s: member %d had finished but its report was lost; taking it from its answer",
                        run.record.job_id, member)
            self.on_execution_done(*decode_report(header, blob))

    def _call_ok(self, run: _JobRun, member: int, msg_type: str, future: Future, timeout_s: float) -> bool:
        try:
            future.result(timeout=timeout_s + CALL_SLACK_S)
            return True
        except Exception as e:  # noqa: BLE001 - the member could not answer: its failure
            self._fail(run, ExecutionOutcome(run.record.job_id, run.execution_id, member, ok=False,
                                             error=f"{type(e).__name__}: member {member} failed {msg_type}: "
                                                   f"{_describe(e, timeout_s)}",
                                             tasklet=f"{msg_type} on member {member}"))
            return False

    def _fail(self, run: _JobRun, outcome: ExecutionOutcome) -> None:
        """Record the job's first failure and cancel the execution on every member (once)."""
        with self._changed:
            if run.record.status.is_terminal or run.record.failure is not None:
                return
            run.record.failure = outcome
            self._changed.notify_all()
        if _by_client(outcome):
            log.info("job %s: cancelled by the client", run.record.job_id)
        else:
            log.error("job %s failed on member %d: %s\n%s", run.record.job_id, outcome.member, outcome.error,
                      outcome.traceback)

    def _cleanup_call(self, run: _JobRun, msg_type: str, extra: dict | None = None) -> None:
        """``cancel`` or ``complete`` to every initialised member still there, each bounded."""
        members = [m for m in sorted(run.initialised) if m not in self._lost]
        for member, call in self._call_all(run, members, msg_type, extra).items():
            try:
                call.result(timeout=self._call_timeout_s + CALL_SLACK_S)
            except Exception as e:  # noqa: BLE001 - a member that cannot be reached is lost anyway
                log.warning("%s of job %s on member %d: %s", msg_type, run.record.job_id, member,
                            _describe(e, self._call_timeout_s))

    def _finish(self, run: _JobRun) -> None:
        record = run.record
        if record.failure is not None and run.initialised:
            self._cleanup_call(run, messages.CANCEL, {"reason": record.message, "member": record.failure.member,
                                                      "by_client": _by_client(record.failure)})
            grace_s = self.control.cancel_grace_ms / 1000
            with self._changed:
                if not self._changed.wait_for(lambda: not (run.awaiting - set(self._lost)), grace_s):
                    log.warning("job %s: members %s did not report within %.1f s of the cancel",
                                record.job_id, sorted(run.awaiting), grace_s)
        with self._changed:
            record.status = JobStatus.COMPLETING
        self._notify(record)
        self._cleanup_call(run, messages.COMPLETE)
        with self._changed:
            record.status = JobStatus.FAILED if record.failure is not None else JobStatus.COMPLETED
            record.completion_time = self._clock()
            run.dag = run.dag_bytes = None
            self._forget(self._finished.add(record.job_id, record.completion_time))
            self._changed.notify_all()
        self.observables.wake()
        log.info("job %s %s in %.2f s", record.job_id, record.status.value,
                 record.completion_time - (record.start_time or record.submission_time))
        self._notify(record)

    def _lost_outcome(self, run: _JobRun, member: int, error: str) -> ExecutionOutcome:
        return ExecutionOutcome(run.record.job_id, run.execution_id, member, ok=False,
                                error=f"MemberLostError: member {member} was lost: {error}",
                                tasklet=f"connection to member {member}")

    def _notify(self, record: JobRecord) -> None:
        if self._on_status is not None:
            try:
                self._on_status(record)
            except Exception:  # noqa: BLE001
                log.exception("job status listener failed")


def _describe(error: BaseException, timeout_s: float) -> str:
    """A failed call's error text; a wait that ran out says so with its bound."""
    if isinstance(error, TimeoutError) and not str(error):
        return f"no answer within {timeout_s} s"
    return str(error)


_CLIENT_TASKLET = "client"
"""The ``tasklet`` of the outcome a client's cancel records."""


def _by_client(outcome: ExecutionOutcome) -> bool:
    """Whether ``outcome`` is a client's cancel: asked for, so no error to log."""
    return outcome.cancelled and outcome.tasklet == _CLIENT_TASKLET
