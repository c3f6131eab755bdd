"""One execution of a job over the cluster, as the coordinator drives it (a part of
:class:`~jet.cluster.coordination.coordinator.JobCoordinator`).

``init`` to every member (the plan message with the guarantee, the snapshot to restore and the
first snapshot id; within that call a member first waits for its streams to the execution's
other members, which may be rejoining, then starts its part at once: there is no ``start``
round), the snapshots on schedule (:class:`SnapshotCoordinator`) once every member is
initialised, then every member's outcome, which may come before the ``init`` round ends: a member
silent for ``report_wait_ms`` is asked for its execution's state. The first failure is recorded
once (:meth:`_fail_execution`); the execution is then cancelled on every member, which get
``cancel_grace_ms`` to report, and ``complete`` cleans it up on every member that did not clean
it up itself (a member does after a success, when no snapshot's phase 2 can follow). Every call
is bounded (``init_timeout_ms``, ``control_timeout_ms``, ``snapshot_timeout_ms``), and a member
that does not answer in time fails the execution, named.
"""

from __future__ import annotations

import logging
import secrets
from concurrent.futures import Future

from jet.cluster.links import messages
from jet.cluster.edges.distributed_plan import partition_owners
from jet.cluster.executions.job_execution import ExecutionOutcome, PlanMessage, decode_report
from jet.cluster.coordination.job_state import Execution, JobRun, JobStatus, describe_failure
from jet.cluster.coordination.snapshot_coordinator import SnapshotCoordinator, SnapshotResult

log = logging.getLogger("jet.cluster.coordination.coordinator")

CALL_SLACK_S = 2.0
"""Beyond a call's own deadline, how long the coordinator waits for its answer (a call to member 0
itself runs on that member's handlers' pool, with no transport deadline)."""
EXECUTION_DONE_STATE = "done"
EXECUTION_RUNNING_STATE = "running"
CLIENT_TASKLET = "client"
"""The ``tasklet`` of the outcome a client's cancel (or suspend, restart) records."""


class ExecutionDriver:
    """Runs one execution of a job at a time (a mixin over the coordinator's condition
    ``_changed``, its member calls, its pool and its settings)."""

    @property
    def _call_timeout_s(self) -> float:
        return self.control.control_timeout_ms / 1000

    def _execute(self, run: JobRun) -> None:
        """One execution, from ``init`` to ``complete`` on every member."""
        record = run.record
        with self._changed:
            execution = Execution(secrets.randbits(63), self._execution_members(run))
            run.execution = execution
            record.status = JobStatus.STARTING
            record.start_time = record.start_time or self._clock()
            record.members = list(execution.members)
            lost = {m: error for m, error in self._lost.items() if m in execution.members}
        self._status_changed(record)
        log.info("starting job %s (%s), execution %d on %s%s, DAG:\n%s", record.job_id, record.name,
                 execution.id, _describe_members(execution.members, self.member_count),
                 f" (restart {record.restarts})" if record.restarts else "",
                 run.dag.to_dot(default_local_parallelism=self._threads))
        for member, error in lost.items():
            execution.lost.add(member)
            self._fail_execution(run, execution, self._lost_outcome(run, member, error))
        if execution.failure is None:
            self._init_and_start(run, execution)
            self._await_reports(run, execution)
        if execution.snapshots is not None:
            execution.snapshots.stop(wait_s=2 * execution.snapshots.timeout_s + CALL_SLACK_S)
        self._wind_down(run, execution)

    def _execution_members(self, run: JobRun) -> list[int]:
        """Who runs the job's next execution (the caller holds the condition): with
        ``auto_scaling`` the members that are up, else every member (a lost one fails it)."""
        if run.config.auto_scaling:
            return [m for m in range(self.member_count) if m not in self._lost]
        return list(range(self.member_count))

    def _init_and_start(self, run: JobRun, execution: Execution) -> None:
        record = run.record
        try:
            restore = self.job_store.restore_point(record)
        except Exception as e:  # noqa: BLE001 - a damaged record or store: the job cannot go on
            self._fail_execution(run, execution, ExecutionOutcome(
                record.job_id, execution.id, 0, ok=False, error=f"{type(e).__name__}: {e}",
                tasklet="reading the snapshot to restore"))
            return
        if restore is not None:
            log.info("job %s: execution %d restores %s", record.job_id, execution.id, restore)
        members = list(execution.members)
        owners = partition_owners(len(members))
        init_s = self.control.init_timeout_ms / 1000
        guarantee = record.config.processing_guarantee.value
        first_snapshot_id = self.job_store.next_snapshot_id(record.job_id)
        plan = PlanMessage(record.job_id, execution.id, members[0], self.member_count, owners, record.name,
                           guarantee, restore, first_snapshot_id, members,
                           record.config.metrics_enabled).to_header()  # one copy for all
        with self._changed:  # a member starts within its init: its report may come before the round ends
            execution.awaiting = {m for m in members if m not in self._lost}
            execution.init_sent = True
        payloads = messages.encode_message_per_value(plan, run.dag_bytes, "member_index", members)
        inits = {m: self._start_call(m, messages.INIT, payloads[m], init_s) for m in members}
        for member, future in inits.items():
            if not self._call_ok(run, execution, member, messages.INIT, future, init_s):
                with self._changed:
                    execution.awaiting.discard(member)
        snapshots = None
        if record.config.processing_guarantee.snapshots and self.job_store.keeps(record.job_id):
            snapshots = SnapshotCoordinator(
                record.job_id, execution.id, self.job_store,
                lambda msg_type, extra, timeout_s: self._call_all(run, execution, execution.members, msg_type,
                                                                  extra, timeout_s),
                interval_s=record.config.snapshot_interval_ms / 1000,
                timeout_s=self.control.snapshot_timeout_ms / 1000,
                on_result=lambda result: self._snapshot_taken(run, result))
        with self._changed:
            if execution.failure is not None:
                return
            record.status = JobStatus.RUNNING
            # In place as the job turns RUNNING: an export or a suspend asked for before its
            # snapshots start queues its snapshot here (it used to find none and failed the job).
            execution.snapshots = snapshots
            pending = run.requested  # asked for while STARTING: not acted on yet
        self._status_changed(record)
        if snapshots is not None:
            snapshots.start()  # taken once every member has started
        if pending is not None:
            self._terminate(run, execution, pending, run.export_name)

    def _call_all(self, run: JobRun, execution: Execution, members, msg_type: str, extra: dict | None = None,
                  timeout_s: float | None = None) -> dict[int, Future]:
        """``msg_type`` about ``execution`` to each of ``members``, concurrently."""
        timeout_s = self._call_timeout_s if timeout_s is None else timeout_s
        payload = messages.encode_message({"job_id": run.record.job_id, "execution_id": execution.id,
                                           **(extra or {})})
        return {m: self._start_call(m, msg_type, payload, timeout_s) for m in members}

    def _await_reports(self, run: JobRun, execution: Execution) -> None:
        """Wait for every member's outcome; ask those silent for ``report_wait_ms`` for their state."""
        wait_s = self.control.report_wait_ms / 1000
        while True:
            with self._changed:
                if self._changed.wait_for(lambda: not execution.awaiting or execution.failure is not None
                                          or self._shut_down, wait_s):
                    return
                silent = sorted(execution.awaiting)
            log.info("job %s: no report from members %s for %.1f s; asking for their execution's state",
                     run.record.job_id, silent, wait_s)
            for member, future in self._call_all(run, execution, silent, messages.EXECUTION_STATE).items():
                self._take_state(run, execution, member, future)

    def _take_state(self, run: JobRun, execution: Execution, member: int, future: Future) -> None:
        """A still-running member is waited for; a finished one's report is taken from its answer;
        a member that cannot answer fails the execution, named."""
        try:
            header, blob = messages.decode_message(future.result(timeout=self._call_timeout_s + CALL_SLACK_S))
        except Exception as e:  # noqa: BLE001 - a silent member: the execution fails naming it
            self._fail_execution(run, execution, ExecutionOutcome(
                run.record.job_id, execution.id, member, ok=False,
                error=(f"MemberSilentError: member {member} sent no report of job {run.record.job_id} for "
                       f"{self.control.report_wait_ms} ms and did not answer when asked for the state of "
                       f"execution {execution.id}: {type(e).__name__}: "
                       f"{messages.describe_call_error(e, self._call_timeout_s)}"),
                tasklet=f"execution state on member {member}"))
            return
        if header.get("state") == EXECUTION_DONE_STATE:
            log.warning("job %s: member %d had finished but its report was lost; taking it from its answer",
                        run.record.job_id, member)
            self.on_execution_done(*decode_report(header, blob))

    def _call_ok(self, run: JobRun, execution: Execution, member: int, msg_type: str, future: Future,
                 timeout_s: float) -> bool:
        try:
            future.result(timeout=timeout_s + CALL_SLACK_S)
            return True
        except Exception as e:  # noqa: BLE001 - the member could not answer: its failure
            self._fail_execution(run, execution, ExecutionOutcome(
                run.record.job_id, execution.id, member, ok=False,
                error=f"{type(e).__name__}: member {member} failed {msg_type}: "
                      f"{messages.describe_call_error(e, timeout_s)}",
                tasklet=f"{msg_type} on member {member}"))
            return False

    def _fail_execution(self, run: JobRun, execution: Execution, outcome: ExecutionOutcome) -> None:
        """Record the execution's first failure (once); the job thread then cancels it everywhere."""
        with self._changed:
            if execution.failure is not None or run.execution is not execution or self._shut_down:
                return
            execution.failure = outcome
            self._changed.notify_all()
        if execution.snapshots is not None:
            execution.snapshots.stop()
        if outcome.tasklet == CLIENT_TASKLET:
            log.info("job %s: %s", run.record.job_id, outcome.error)
        elif execution.lost or outcome.error.startswith("MemberLostError"):
            log.warning("job %s: execution %d stopped: %s", run.record.job_id, execution.id, outcome.error)
        else:
            log.error("job %s failed on member %d: %s\n%s", run.record.job_id, outcome.member, outcome.error,
                      outcome.traceback)

    def _cleanup_call(self, run: JobRun, execution: Execution, msg_type: str, extra: dict | None = None) -> None:
        """``cancel`` or ``complete`` to every member sent an ``init`` (its answer may have been
        lost) that is still there and did not clean the execution up itself, each bounded."""
        members = [m for m in execution.members if m not in self._lost and m not in execution.cleaned_up]
        for member, call in self._call_all(run, execution, members, msg_type, extra).items():
            try:
                call.result(timeout=self._call_timeout_s + CALL_SLACK_S)
            except Exception as e:  # noqa: BLE001 - a member that cannot be reached is lost anyway
                log.warning("%s of job %s on member %d: %s", msg_type, run.record.job_id, member,
                            messages.describe_call_error(e, self._call_timeout_s))

    def _wind_down(self, run: JobRun, execution: Execution) -> None:
        """A failed execution is cancelled on every member (with a grace to report), then every
        member cleans it up."""
        failure = execution.failure
        if failure is not None and execution.init_sent:
            self._cleanup_call(run, execution, messages.CANCEL, {
                "reason": describe_failure(failure),
                "member": failure.member, "by_client": failure.tasklet == CLIENT_TASKLET,
                "restarting": bool(execution.lost)})
            grace_s = self.control.cancel_grace_ms / 1000
            with self._changed:
                if not self._changed.wait_for(lambda: not (execution.awaiting - set(self._lost)), grace_s):
                    log.warning("job %s: members %s did not report within %.1f s of the cancel",
                                run.record.job_id, sorted(execution.awaiting), grace_s)
        elif failure is None and run.requested is None:
            with self._changed:
                run.record.status = JobStatus.COMPLETING
            self._notify(run.record)
        self._cleanup_call(run, execution, messages.COMPLETE)

    def _snapshot_taken(self, run: JobRun, result: SnapshotResult) -> None:
        """A snapshot's figures into the job's record (and the store's copy of it)."""
        stats = run.record.snapshots
        with self._changed:
            if result.ok:
                stats.last_id, stats.last_time, stats.last_bytes = result.snapshot_id, result.started, result.bytes
                stats.last_keys, stats.last_duration_ms = result.keys, result.duration_ms
                stats.count += 1
            else:
                stats.failures += 1
                stats.last_failure = result.error
        self.job_store.update(run.record)


def _describe_members(members, cluster_size: int) -> str:
    """``3 members`` for the whole cluster, ``members [0, 1] of 3`` for a part of it."""
    if len(members) == cluster_size:
        return f"{cluster_size} members"
    return f"members {list(members)} of {cluster_size}"
