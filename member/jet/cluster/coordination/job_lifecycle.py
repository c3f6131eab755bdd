"""One job's life on the coordinator, execution after execution (Jet's ``MasterJobContext``).

A :class:`JobLifecycle` runs on a thread of its own: an :class:`~.execution_driver.ExecutionDriver`
per execution, then what :func:`~.job_restarts.decide` says follows (done, failed, restarted once
the lost members are back or on the members that are up, suspended until a resume or a cancel),
and at the end the job's final status, handed to the coordinator's ``on_finished``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from jet.cluster.coordination.context import CoordinationContext, client_outcome
from jet.cluster.coordination.execution_driver import ExecutionDriver, ReportTaken
from jet.cluster.coordination.job_control import JobControl
from jet.cluster.coordination.job_restarts import Next, decide
from jet.cluster.coordination.job_state import Execution, JobRun, JobStatus, Termination
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind

log = logging.getLogger("jet.cluster.coordination.coordinator")


class JobLifecycle:
    """Coordinates one job from its first execution to its end, given the coordination's shared
    parts, the client's requests (to act on one made while an execution started), where a
    member's report taken from its answer goes, and whom to tell when the job ended."""

    def __init__(self, context: CoordinationContext, run: JobRun, control: JobControl, on_report: ReportTaken,
                 on_finished: Callable[[JobRun], None]) -> None:
        self._context = context
        self._run = run
        self._control = control
        self._on_report = on_report
        self._on_finished = on_finished
        self._restarts_in_a_row = 0
        """Restarts after failures since an execution last ran ``restart_backoff_reset_ms``."""

    def start(self) -> None:
        """Run the job on a daemon thread of its own."""
        threading.Thread(target=self.run, name=f"jet-job-{self._run.record.job_id}", daemon=True).start()

    def run(self) -> None:
        context, run = self._context, self._run
        record = run.record
        try:
            go_on = not record.status.is_suspended or self._stay_suspended(record.suspension_cause)
            while go_on and not context.shut_down:
                started = time.monotonic()
                ExecutionDriver(context, run, self._on_report, self._act_on_request).run()
                if (time.monotonic() - started) * 1000 >= context.control.restart_backoff_reset_ms:
                    self._restarts_in_a_row = 0
                go_on = not context.shut_down and self._after_execution()
        except Exception as e:  # noqa: BLE001 - a coordinator bug must still end the job
            if context.shut_down:  # its calls are refused now; the job stays as the store has it
                log.debug("job %s: coordination stopped with the coordinator: %s", record.job_id, e)
                return
            log.exception("coordinating job %s failed", record.job_id)
            record.failure = record.failure or ExecutionOutcome(
                record.job_id, run.execution_id, 0, ok=False, error=f"{type(e).__name__}: {e}",
                tasklet="coordinator", kind=FailureKind.COORDINATOR)
        finally:
            if not context.shut_down:
                self._finish()

    def _act_on_request(self, execution: Execution, request: Termination) -> None:
        self._control.terminate(self._run, execution, request, self._run.export_name)

    def _after_execution(self) -> bool:
        """Act on how the execution ended; True to run another one."""
        context, run = self._context, self._run
        record, execution = run.record, run.execution
        with context.changed:
            requested, run.requested = run.requested, None
            restart_cause, run.restart_cause = run.restart_cause, ""
        decision = decide(record.config, requested, execution.failure, execution.lost, restart_cause)
        if decision.next is Next.COMPLETE:
            return False
        if decision.next is Next.FAIL:
            record.failure = execution.failure or client_outcome(run, "the job was cancelled by the client")
            return False
        if decision.next is Next.SUSPEND:
            return self._stay_suspended(decision.cause)
        if decision.next is Next.RESTART_AFTER_REJOIN_WAIT:
            with context.changed:
                record.status = JobStatus.NOT_RUNNING
            context.status_changed(record)
            missing = self._await_rejoin(execution)
            with context.changed:
                requested, run.requested = run.requested, None
            if requested in (Termination.CANCEL, Termination.CANCEL_AND_EXPORT):
                record.failure = client_outcome(run, "the job was cancelled by the client")
                return False
            if requested is Termination.SUSPEND:
                return self._stay_suspended("suspended by the client")
            if missing and decision.suspend_if_not_whole:
                return self._stay_suspended(f"{decision.cause}; the cluster was not whole again within "
                                            f"{context.control.member_rejoin_timeout_ms} ms")
            if missing:
                log.warning("job %s goes on without member(s) %s, not back within %d ms (auto-scaling)",
                            record.job_id, missing, context.control.member_rejoin_timeout_ms)
            return self._restart_after_failure(decision.cause)
        record.restarts += 1
        record.last_restart_cause = decision.cause
        log.info("job %s: restart %d (%s)", record.job_id, record.restarts, decision.cause)
        return True

    def _restart_after_failure(self, cause: str) -> bool:
        """Restart after a pause that doubles with each restart in a row (``restart_delay_ms`` up
        to ``restart_max_delay_ms``); past ``max_restarts`` in a row the job stops restarting:
        suspended with a guarantee (a resume tries again), failed without. True to restart."""
        context, run = self._context, self._run
        record, control = run.record, context.control
        self._restarts_in_a_row += 1
        if control.max_restarts and self._restarts_in_a_row > control.max_restarts:
            cause = f"{cause}; restarted {control.max_restarts} times in a row (max_restarts), so it stops restarting"
            self._restarts_in_a_row = 0
            if record.config.processing_guarantee.snapshots:
                return self._stay_suspended(cause)
            log.warning("job %s: %s", record.job_id, cause)
            record.failure = run.execution.failure
            return False
        delay_ms = min(control.restart_delay_ms * 2 ** (self._restarts_in_a_row - 1), control.restart_max_delay_ms)
        with context.changed:  # a request (a cancel, say) or the coordinator's shutdown cuts it short
            context.changed.wait_for(lambda: run.requested is not None or context.shut_down, delay_ms / 1000)
        record.restarts += 1
        record.last_restart_cause = cause
        log.info("job %s: restart %d after %d ms (%s)", record.job_id, record.restarts, delay_ms, cause)
        return True

    def _await_rejoin(self, execution: Execution) -> list[int]:
        """Wait up to ``member_rejoin_timeout_ms`` for the members ``execution`` lost to rejoin
        (a request or the coordinator's shutdown ends it early); those still missing."""
        context, run = self._context, self._run

        def missing() -> list[int]:
            return sorted(m for m in execution.lost if m in context.lost)

        with context.changed:
            context.changed.wait_for(lambda: not missing() or run.requested is not None or context.shut_down,
                                     context.control.member_rejoin_timeout_ms / 1000)
            return missing()

    def _stay_suspended(self, cause: str) -> bool:
        """SUSPENDED until a resume (True) or a cancel (False)."""
        context, run = self._context, self._run
        record = run.record
        with context.changed:
            record.status = JobStatus.SUSPENDED
            record.suspension_cause = cause
            run.resume_requested = False
        context.status_changed(record)
        log.info("job %s is suspended: %s", record.job_id, cause)
        with context.changed:
            context.changed.wait_for(lambda: run.resume_requested or run.requested is not None or context.shut_down)
            resumed, run.resume_requested = run.resume_requested, False
            cancelled = run.requested in (Termination.CANCEL, Termination.CANCEL_AND_EXPORT)
            run.requested = None
            record.suspension_cause = ""
        if cancelled or context.shut_down:
            record.failure = client_outcome(run, "the job was cancelled by the client")
            return False
        log.info("job %s resumes", record.job_id)
        return resumed

    def _finish(self) -> None:
        context, run = self._context, self._run
        record = run.record
        with context.changed:
            record.status = JobStatus.FAILED if record.failure is not None else JobStatus.COMPLETED
            record.completion_time = context.clock()
            run.release_finished()
            context.job_store.update(record)  # gone from the store before anyone sees the job ended
            context.changed.notify_all()
        self._on_finished(run)
        took_s = record.completion_time - (record.start_time or record.submission_time)
        if record.failure is not None and record.failure.kind is FailureKind.CANCELLED:
            log.info("job %s was cancelled after %.2f s", record.job_id, took_s)  # FAILED, as Jet has it
        else:
            log.info("job %s %s in %.2f s", record.job_id, record.status.value, took_s)
        context.notify(record)
