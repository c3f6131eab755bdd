"""One execution of a job over the cluster, as the coordinator drives it (one
:class:`ExecutionDriver` per execution, given the coordination's shared parts).

``init`` to every member (the plan message with the guarantee, the snapshot to restore and the
first snapshot id; within that call a member first waits for its streams to the execution's
other members, which may be rejoining, then starts its part at once: there is no ``start``
round), the snapshots on schedule (:class:`SnapshotCoordinator`) once every member is
initialised, then every member's outcome, which may come before the ``init`` round ends: a member
silent for ``report_wait_ms`` is asked for its execution's state. The first failure is recorded
once (:func:`fail_execution`); the execution is then cancelled on every member, which get
``cancel_grace_ms`` to report, and ``complete`` cleans it up on every member that did not clean
it up itself (a member does after a success, when no snapshot's phase 2 can follow). Every call
is bounded (``init_timeout_ms``, ``control_timeout_ms``, ``snapshot_timeout_ms``), and a member
that does not answer in time fails the execution, named.
"""

from __future__ import annotations

import logging
import secrets
from concurrent.futures import Future
from typing import Callable

from jet.cluster.coordination.context import CALL_SLACK_S, CLIENT_TASKLET, CoordinationContext, lost_member_outcome
from jet.cluster.coordination.job_state import Execution, JobRun, JobStatus, Termination, describe_failure
from jet.cluster.coordination.snapshot_coordinator import SnapshotCoordinator, SnapshotResult
from jet.cluster.edges.distributed_plan import partition_owners
from jet.cluster.executions.job_execution import PlanMessage
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind, decode_report
from jet.cluster.links import messages
from jet.snapshot import SnapshotError

log = logging.getLogger("jet.cluster.coordination.coordinator")

EXECUTION_DONE_STATE = "done"
EXECUTION_RUNNING_STATE = "running"

ReportTaken = Callable[..., None]
"""``on_report(outcome, results, metrics, measurements)``: a member's end report reached the
coordinator (here: taken from a member's answer about its execution's state)."""


def fail_execution(context: CoordinationContext, run: JobRun, execution: Execution,
                   outcome: ExecutionOutcome) -> None:
    """Record the execution's first failure (once); its driver then cancels it everywhere."""
    with context.changed:
        if execution.failure is not None or run.execution is not execution or context.shut_down:
            return
        execution.failure = outcome
        context.changed.notify_all()
    if execution.snapshots is not None:
        execution.snapshots.stop()
    if outcome.tasklet == CLIENT_TASKLET:
        log.info("job %s: %s", run.record.job_id, outcome.error.removeprefix("JobCancelledError: "))
    elif execution.lost or outcome.kind.restartable:
        log.warning("job %s: execution %d stopped: %s", run.record.job_id, execution.id, outcome.error)
    else:
        log.error("job %s failed on member %d: %s\n%s", run.record.job_id, outcome.member, outcome.error,
                  outcome.traceback)


class ExecutionDriver:
    """Runs one execution of a job: made by the job's :class:`~.job_lifecycle.JobLifecycle` for
    each execution, given the coordination's shared parts and where a member's end report goes."""

    def __init__(self, context: CoordinationContext, run: JobRun, on_report: ReportTaken,
                 on_request: Callable[[Execution, Termination], None]) -> None:
        """``on_report``: where an end report taken from a member's answer goes; ``on_request``:
        acts on a client's request made while the execution was starting, once it runs."""
        self._context = context
        self._run = run
        self._on_report = on_report
        self._on_request = on_request
        self.execution: Execution | None = None

    def run(self) -> None:
        """The execution, from ``init`` to ``complete`` on every member."""
        context, run = self._context, self._run
        record = run.record
        with context.changed:
            execution = self.execution = Execution(secrets.randbits(63), self._members())
            run.execution = execution
            record.status = JobStatus.STARTING
            record.start_time = record.start_time or context.clock()
            record.execution_start_time = context.clock()
            record.members = list(execution.members)
            lost = {m: error for m, error in context.lost.items() if m in execution.members}
        context.status_changed(record)
        dag = ("" if record.restarts
               else ", DAG:\n" + run.dag.to_dot(default_local_parallelism=context.cooperative_threads))
        log.info("starting job %s (%s), execution %d on %s%s%s", record.job_id, record.name, execution.id,
                 _describe_members(execution.members, context.member_count),
                 f" (restart {record.restarts})" if record.restarts else "", dag)  # the DAG once, not per restart
        for member, error in lost.items():
            execution.lost.add(member)
            self.fail(lost_member_outcome(run, member, error))
        if execution.failure is None:
            self._init_and_start()
            self._await_reports()
        if execution.snapshots is not None:
            execution.snapshots.stop(wait_s=2 * execution.snapshots.timeout_s + CALL_SLACK_S)
        self._wind_down()

    def fail(self, outcome: ExecutionOutcome) -> None:
        """Record the execution's first failure (see :func:`fail_execution`)."""
        fail_execution(self._context, self._run, self.execution, outcome)

    def _members(self) -> list[int]:
        """Who runs the execution (the caller holds the condition): with ``auto_scaling`` the
        members that are up, else every member (a lost one fails it)."""
        if self._run.config.auto_scaling:
            return self._context.up_members()
        return list(range(self._context.member_count))

    def _init_and_start(self) -> None:
        context, run, execution = self._context, self._run, self.execution
        record = run.record
        try:
            restore = context.job_store.restore_point(record)
        except Exception as e:  # noqa: BLE001 - a damaged record or store: the job cannot go on
            kind = FailureKind.SNAPSHOT_DAMAGED if isinstance(e, SnapshotError) else FailureKind.COORDINATOR
            self.fail(ExecutionOutcome(record.job_id, execution.id, 0, ok=False, error=f"{type(e).__name__}: {e}",
                                       tasklet="reading the snapshot to restore", kind=kind))
            return
        if restore is not None:
            log.info("job %s: execution %d restores %s", record.job_id, execution.id, restore)
        members = list(execution.members)
        owners = partition_owners(len(members))
        init_s = context.control.init_timeout_ms / 1000
        guarantee = record.config.processing_guarantee.value
        first_snapshot_id = context.job_store.next_snapshot_id(record.job_id)
        plan = PlanMessage(record.job_id, execution.id, members[0], context.member_count, owners, record.name,
                           guarantee, restore, first_snapshot_id, members,
                           record.config.metrics_enabled).to_header()  # one copy for all
        with context.changed:  # a member starts within its init: its report may come before the round ends
            execution.awaiting = {m for m in members if m not in context.lost}
            execution.init_sent = True
        payloads = messages.encode_message_per_value(plan, run.dag_bytes, "member_index", members)
        inits = {m: context.start_call(m, messages.INIT, payloads[m], init_s) for m in members}
        for member, future in inits.items():
            if not self._call_ok(member, messages.INIT, future, init_s):
                with context.changed:
                    execution.awaiting.discard(member)
        snapshots = None
        if record.config.processing_guarantee.snapshots and context.job_store.keeps(record.job_id):
            snapshots = SnapshotCoordinator(
                record.job_id, execution.id, context.job_store,
                lambda msg_type, extra, timeout_s: self._call_all(execution.members, msg_type, extra, timeout_s),
                interval_s=record.config.snapshot_interval_ms / 1000,
                timeout_s=context.control.snapshot_timeout_ms / 1000,
                on_result=self._snapshot_taken)
        with context.changed:
            if execution.failure is not None:
                return
            record.status = JobStatus.RUNNING
            # In place as the job turns RUNNING: an export or a suspend asked for before its
            # snapshots start queues its snapshot here (it used to find none and failed the job).
            execution.snapshots = snapshots
            pending = run.requested  # asked for while STARTING: not acted on yet
        context.status_changed(record)
        if snapshots is not None:
            snapshots.start()  # taken once every member has started
        if pending is not None:
            self._on_request(execution, pending)

    def _call_all(self, members, msg_type: str, extra: dict | None = None,
                  timeout_s: float | None = None) -> dict[int, Future]:
        """``msg_type`` about the execution to each of ``members``, concurrently."""
        context = self._context
        timeout_s = context.call_timeout_s if timeout_s is None else timeout_s
        payload = messages.encode_message({"job_id": self._run.record.job_id, "execution_id": self.execution.id,
                                           **(extra or {})})
        return {m: context.start_call(m, msg_type, payload, timeout_s) for m in members}

    def _await_reports(self) -> None:
        """Wait for every member's outcome; ask those silent for ``report_wait_ms`` for their state."""
        context, execution = self._context, self.execution
        wait_s = context.control.report_wait_ms / 1000
        while True:
            with context.changed:
                if context.changed.wait_for(lambda: not execution.awaiting or execution.failure is not None
                                            or context.shut_down, wait_s):
                    return
                silent = sorted(execution.awaiting)
            log.info("job %s: no report from members %s for %.1f s; asking for their execution's state",
                     self._run.record.job_id, silent, wait_s)
            for member, future in self._call_all(silent, messages.EXECUTION_STATE).items():
                self._take_state(member, future)

    def _take_state(self, member: int, future: Future) -> None:
        """A still-running member is waited for; a finished one's report is taken from its answer;
        a member that cannot answer fails the execution, named."""
        context, run, execution = self._context, self._run, self.execution
        try:
            header, blob = messages.decode_message(future.result(timeout=context.call_timeout_s + CALL_SLACK_S))
        except Exception as e:  # noqa: BLE001 - a silent member: the execution fails naming it
            self.fail(ExecutionOutcome(
                run.record.job_id, execution.id, member, ok=False,
                error=(f"MemberSilentError: member {member} sent no report of job {run.record.job_id} for "
                       f"{context.control.report_wait_ms} ms and did not answer when asked for the state of "
                       f"execution {execution.id}: {type(e).__name__}: "
                       f"{messages.describe_call_error(e, context.call_timeout_s)}"),
                tasklet=f"execution state on member {member}", kind=FailureKind.MEMBER_SILENT))
            return
        if header.get("state") == EXECUTION_DONE_STATE:
            log.warning("job %s: member %d had finished but its report was lost; taking it from its answer",
                        run.record.job_id, member)
            self._on_report(*decode_report(header, blob))

    def _call_ok(self, member: int, msg_type: str, future: Future, timeout_s: float) -> bool:
        try:
            future.result(timeout=timeout_s + CALL_SLACK_S)
            return True
        except Exception as e:  # noqa: BLE001 - the member could not answer: its failure
            # No link to the member at all (it is rejoining) is the cluster's failure, not the job's.
            kind = FailureKind.NOT_CONNECTED if isinstance(e, ConnectionError) else FailureKind.MEMBER_SILENT
            self.fail(ExecutionOutcome(
                self._run.record.job_id, self.execution.id, member, ok=False,
                error=f"{type(e).__name__}: member {member} failed {msg_type}: "
                      f"{messages.describe_call_error(e, timeout_s)}",
                tasklet=f"{msg_type} on member {member}", kind=kind))
            return False

    def _cleanup_call(self, msg_type: str, extra: dict | None = None) -> None:
        """``cancel`` or ``complete`` to every member sent an ``init`` (its answer may have been
        lost) that is still there and did not clean the execution up itself, each bounded."""
        context, execution = self._context, self.execution
        members = [m for m in execution.members if m not in context.lost and m not in execution.cleaned_up]
        for member, call in self._call_all(members, msg_type, extra).items():
            try:
                call.result(timeout=context.call_timeout_s + CALL_SLACK_S)
            except Exception as e:  # noqa: BLE001 - a member that cannot be reached is lost anyway
                log.warning("%s of job %s on member %d: %s", msg_type, self._run.record.job_id, member,
                            messages.describe_call_error(e, context.call_timeout_s))

    def _wind_down(self) -> None:
        """A failed execution is cancelled on every member (with a grace to report), then every
        member cleans it up."""
        context, run, execution = self._context, self._run, self.execution
        failure = execution.failure
        if failure is not None and execution.init_sent:
            self._cleanup_call(messages.CANCEL, {
                "reason": describe_failure(failure),
                "member": failure.member, "by_client": failure.tasklet == CLIENT_TASKLET,
                "member_lost": bool(execution.lost) or failure.kind.restartable})
            grace_s = context.control.cancel_grace_ms / 1000
            with context.changed:
                if not context.changed.wait_for(lambda: not (execution.awaiting - set(context.lost)), grace_s):
                    log.warning("job %s: members %s did not report within %.1f s of the cancel",
                                run.record.job_id, sorted(execution.awaiting), grace_s)
        elif failure is None and run.requested is None:
            with context.changed:
                run.record.status = JobStatus.COMPLETING
            context.notify(run.record)
        self._cleanup_call(messages.COMPLETE)

    def _snapshot_taken(self, result: SnapshotResult) -> None:
        """A snapshot's figures into the job's record (and the store's copy of it)."""
        context, record = self._context, self._run.record
        stats = record.snapshots
        with context.changed:
            if result.ok:
                stats.last_id, stats.last_time, stats.last_bytes = result.snapshot_id, result.started, result.bytes
                stats.last_keys, stats.last_duration_ms = result.keys, result.duration_ms
                stats.count += 1
            else:
                stats.failures += 1
                stats.last_failure = result.error
        context.job_store.update(record)


def _describe_members(members, cluster_size: int) -> str:
    """``3 members`` for the whole cluster, ``members [0, 1] of 3`` for a part of it."""
    if len(members) == cluster_size:
        return f"{cluster_size} members"
    return f"members {list(members)} of {cluster_size}"
