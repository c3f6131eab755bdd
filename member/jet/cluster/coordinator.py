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
failure's text, traceback and member. Nothing waits forever: control calls have deadlines, a lost
member counts as that member's failure, and after a failure the members get
``CANCEL_GRACE_S`` to report before the job is finalised anyway.
"""

from __future__ import annotations

import enum
import logging
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

import cloudpickle

from jet.cluster import messages
from jet.cluster.distributed_plan import partition_owners
from jet.cluster.job_execution import ExecutionOutcome, PlanMessage
from jet.core.dag import DAG, DagValidationError

log = logging.getLogger("jet.cluster.coordinator")

INIT_TIMEOUT_S = 30.0
START_TIMEOUT_S = 10.0
CANCEL_TIMEOUT_S = 5.0
CANCEL_GRACE_S = 10.0
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


class JobCoordinator:
    """Coordinates every job of the cluster; lives on member 0."""

    def __init__(self, member_count: int, call_member: MemberCall, *, cooperative_threads: int = 1,
                 on_status: Callable[[JobRecord], None] | None = None) -> None:
        self.member_count = member_count
        self._call = call_member
        self._threads = cooperative_threads
        self._on_status = on_status
        self._changed = threading.Condition()
        self._jobs: dict[str, _JobRun] = {}
        self._latest: str | None = None
        self._lost: dict[int, str] = {}
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
        run = _JobRun(JobRecord(job_id, name), dag, dag_bytes)
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
        record = JobRecord(job_id, name, status=JobStatus.FAILED, completion_time=time.time(),
                           failure=ExecutionOutcome(**{**outcome.to_header(), "tasklet": "building the job"}))
        with self._changed:
            self._jobs[job_id] = _JobRun(record, DAG(), b"")
            self._latest = job_id
            self._changed.notify_all()
        log.error("job %s could not be built: %s", name, record.message)
        self._notify(record)
        return job_id

    def record(self, job_id: str) -> JobRecord:
        """The job's record; ``KeyError`` naming the id when unknown."""
        with self._changed:
            run = self._jobs.get(job_id)
        if run is None:
            raise KeyError(f"no job with id {job_id!r} on this coordinator")
        return run.record

    def latest(self) -> JobRecord | None:
        """The most recently submitted job."""
        with self._changed:
            return None if self._latest is None else self._jobs[self._latest].record

    def wait(self, job_id: str, timeout_s: float) -> JobRecord:
        """Wait up to ``timeout_s`` for the job to end; returns its record either way."""
        record = self.record(job_id)
        with self._changed:
            self._changed.wait_for(lambda: record.status.is_terminal, timeout_s)
        return record

    def cancel(self, job_id: str) -> JobRecord:
        """Cancel the job everywhere; it ends FAILED with ``JobCancelledError``."""
        run = self._jobs.get(job_id) or self._raise_unknown(job_id)
        self._fail(run, ExecutionOutcome(job_id, run.execution_id, 0, ok=False, cancelled=True,
                                         error="JobCancelledError: the job was cancelled by the client",
                                         tasklet="client"))
        return run.record

    @staticmethod
    def _raise_unknown(job_id: str) -> _JobRun:
        raise KeyError(f"no job with id {job_id!r} on this coordinator")

    # -- member side ------------------------------------------------------------------------
    def results(self, job_id: str) -> dict[str, list]:
        """The job's named results (``Context.results`` of every member, in member order)."""
        run = self._jobs.get(job_id) or self._raise_unknown(job_id)
        merged: dict[str, list] = {}
        with self._changed:
            for member in sorted(run.results):
                for name, items in run.results[member].items():
                    merged.setdefault(name, []).extend(items)
        return merged

    def metrics(self, job_id: str) -> dict[str, dict[str, int]]:
        """Items in and out per vertex over the cluster: final counts of finished members, live
        counts asked from the others (a member that cannot answer is left out)."""
        run = self._jobs.get(job_id) or self._raise_unknown(job_id)
        with self._changed:
            per_member = dict(run.final_metrics)
            live = [m for m in run.awaiting if m not in per_member] if run.record.status is JobStatus.RUNNING else []
        payload = messages.encode_message({"execution_id": run.execution_id})
        for member in live:
            try:
                reply = self._call(member, messages.EXECUTION_METRICS, payload, START_TIMEOUT_S)
                per_member[member] = messages.decode_message(reply)[0]["metrics"]
            except Exception as e:  # noqa: BLE001 - metrics are best effort
                log.debug("no metrics from member %d: %s", member, e)
        total: dict[str, dict[str, int]] = {}
        for metrics in per_member.values():
            for vertex, counts in metrics.items():
                summed = total.setdefault(vertex, {})
                for key, value in counts.items():
                    summed[key] = summed.get(key, 0) + value
        return total

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

    def _execute(self, run: _JobRun) -> None:
        record = run.record
        members = range(self.member_count)
        with self._changed:
            if run.record.failure is not None:
                return
            run.execution_id = secrets.randbits(63)
            record.status, record.start_time = JobStatus.STARTING, time.time()
            lost = dict(self._lost)
        self._notify(record)
        log.info("starting job %s (%s), execution %d on %d members, DAG:\n%s", record.job_id, record.name,
                 run.execution_id, self.member_count, run.dag.to_dot(default_local_parallelism=self._threads))
        for member, error in lost.items():
            self._fail(run, self._lost_outcome(run, member, error))
        if record.failure is not None:
            return
        owners = partition_owners(self.member_count)
        inits = {m: self._pool.submit(self._call, m, messages.INIT, messages.encode_message(
            PlanMessage(record.job_id, run.execution_id, m, self.member_count, owners, record.name).to_header(),
            run.dag_bytes), INIT_TIMEOUT_S) for m in members}
        for member, future in inits.items():
            if self._call_ok(run, member, messages.INIT, future):
                run.initialised.add(member)
        with self._changed:
            if record.failure is not None:
                return
            record.status = JobStatus.RUNNING
            run.awaiting = {m for m in members if m not in self._lost}
        self._notify(record)
        header = messages.encode_message({"job_id": record.job_id, "execution_id": run.execution_id})
        starts = {m: self._pool.submit(self._call, m, messages.START, header, START_TIMEOUT_S) for m in members}
        for member, future in starts.items():
            self._call_ok(run, member, messages.START, future)
        with self._changed:
            self._changed.wait_for(lambda: not run.awaiting or record.failure is not None)

    def _call_ok(self, run: _JobRun, member: int, msg_type: str, future) -> bool:
        try:
            future.result()
            return True
        except Exception as e:  # noqa: BLE001 - the member could not answer: its failure
            self._fail(run, ExecutionOutcome(run.record.job_id, run.execution_id, member, ok=False,
                                             error=f"{type(e).__name__}: member {member} failed {msg_type}: {e}",
                                             tasklet=f"{msg_type} on member {member}"))
            return False

    def _fail(self, run: _JobRun, outcome: ExecutionOutcome) -> None:
        """Record the job's first failure and cancel the execution on every member (once)."""
        with self._changed:
            if run.record.status.is_terminal or run.record.failure is not None:
                return
            run.record.failure = outcome
            self._changed.notify_all()
        log.error("job %s failed on member %d: %s\n%s", run.record.job_id, outcome.member, outcome.error,
                  outcome.traceback)

    def _cancel_everywhere(self, run: _JobRun) -> None:
        failure = run.record.failure
        payload = messages.encode_message({"job_id": run.record.job_id, "execution_id": run.execution_id,
                                           "reason": run.record.message, "member": failure.member})
        calls = [self._pool.submit(self._call, m, messages.CANCEL, payload, CANCEL_TIMEOUT_S)
                 for m in sorted(run.initialised) if m not in self._lost]
        for call in calls:
            try:
                call.result()
            except Exception as e:  # noqa: BLE001 - a member that cannot be reached is lost anyway
                log.warning("cancel of job %s: %s", run.record.job_id, e)

    def _finish(self, run: _JobRun) -> None:
        record = run.record
        if record.failure is not None and run.initialised:
            self._cancel_everywhere(run)
            with self._changed:
                if not self._changed.wait_for(lambda: not (run.awaiting - set(self._lost)), CANCEL_GRACE_S):
                    log.warning("job %s: members %s did not report within %.0f s of the cancel",
                                record.job_id, sorted(run.awaiting), CANCEL_GRACE_S)
        with self._changed:
            record.status = JobStatus.COMPLETING
        self._notify(record)
        payload = messages.encode_message({"job_id": record.job_id, "execution_id": run.execution_id})
        calls = [self._pool.submit(self._call, m, messages.COMPLETE, payload, CANCEL_TIMEOUT_S)
                 for m in sorted(run.initialised) if m not in self._lost]
        for call in calls:
            try:
                call.result()
            except Exception as e:  # noqa: BLE001
                log.warning("cleanup of job %s: %s", record.job_id, e)
        with self._changed:
            record.status = JobStatus.FAILED if record.failure is not None else JobStatus.COMPLETED
            record.completion_time = time.time()
            run.dag = run.dag_bytes = None
            self._changed.notify_all()
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
