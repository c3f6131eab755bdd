"""A member's part of every job: the control calls the coordinator drives its executions with
(``init``, ``cancel``, ``complete``, the snapshot phases, questions about an execution's state and
figures) and the end reports it sends back, retried until delivered."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from typing import Callable

from jet.cluster.coordination.execution_driver import EXECUTION_DONE_STATE, EXECUTION_RUNNING_STATE
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.executions.job_execution import JobExecution, PlanMessage
from jet.cluster.executions.outcome import ExecutionOutcome
from jet.cluster.links import messages
from jet.cluster.links.errors import LinkError, NotFoundError
from jet.cluster.links.membership import Membership
from jet.cluster.member_http import MemberMetrics
from jet.cluster.settings import MemberSettings
from jet.core.edge import EdgeConfig
from jet.execution.errors import JobCancelledError
from jet.execution.gc_tuning import return_freed_memory
from jet.execution.service import TaskletExecutionService
from jet.snapshot import SnapshotError, SnapshotStore

log = logging.getLogger("jet.cluster.member")

REPORT_FIRST_BACKOFF_S = 0.1
REPORT_MAX_BACKOFF_S = 5.0


class JobInitError(RuntimeError):
    """Building a job's execution on this member failed; the message holds the traceback."""


class MemberExecutions:
    """The executions running on one member and the handlers of the coordinator's calls about
    them, given the member's parts they use: its settings, membership, network, tasklet service,
    snapshot store and metrics, the event set when it stops, how to send a message to the
    coordinator and how to publish an observable sink's items."""

    def __init__(self, index: int, member_count: int, settings: MemberSettings, *, membership: Membership,
                 network: MemberNetwork, service: TaskletExecutionService, edge_defaults: EdgeConfig,
                 snapshot_store: SnapshotStore | None, metrics: MemberMetrics, stopped: threading.Event,
                 send_to_coordinator: Callable[[str, bytes], None],
                 publish_observable: Callable[[str, str, int, list], None]) -> None:
        self.index = index
        self.member_count = member_count
        self.settings = settings
        self.membership = membership
        self.network = network
        self.service = service
        self.edge_defaults = edge_defaults
        self.snapshot_store = snapshot_store
        self.metrics = metrics
        self.stopped = stopped
        self._send_to_coordinator = send_to_coordinator
        self._publish_observable = publish_observable
        self.executions: dict[int, JobExecution] = {}
        self._undelivered: dict[int, tuple[dict, bytes]] = {}
        """Execution id -> the end report of an execution cleaned up after its success, until delivered."""
        self._lock = threading.Lock()
        remote = index != 0  # member 0 reports to itself in place: no network can lose that
        control = settings.control
        self._faults = {"drop_reports": control.fault_drop_reports if remote else 0,
                        "unanswered_state_queries": control.fault_unanswered_state_queries if remote else 0,
                        "fail_snapshot_phase1": control.fault_fail_snapshot_phase1}
        """Fault injection for tests: how many more reports to drop and state queries to ignore."""

    def init(self, peer: int, header: dict, blob: bytes) -> dict:
        message = PlanMessage.from_header(header)
        if message.member_index != self.index or message.member_count != self.member_count:
            raise ValueError(f"init for member {message.member_index} of {message.member_count} reached "
                             f"member {self.index} of {self.member_count}")
        # A member that rejoined the coordinator may not have rejoined this one yet, and senders to
        # it would fail at once: wait for it, within half of the coordinator's deadline for init.
        control = self.settings.control
        wait_s = min(control.member_rejoin_timeout_ms, control.init_timeout_ms / 2) / 1000
        members = range(self.member_count) if message.members is None else message.members
        missing = self.membership.wait_joined(members, wait_s)
        if missing:
            self.network.discard(message.execution_id)
            raise LinkError(f"member {self.index} has no stream to members {missing} of execution "
                            f"{message.execution_id} after waiting {wait_s:g} s for them to rejoin")
        try:
            execution = JobExecution(message, blob, network=self.network, service=self.service,
                                     on_done=self.report, edge_defaults=self.edge_defaults,
                                     flow_control_period_ms=self.settings.flow_control_period_ms,
                                     publish_observable=self._publish_observable,
                                     progress_log_interval_ms=self.settings.progress_log_interval_ms,
                                     snapshot_store=self.snapshot_store)
        except Exception as e:  # the user's supplier or an unpicklable DAG: the traceback goes to the job
            self.network.discard(message.execution_id)
            raise JobInitError(f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
        with self._lock:
            closed = self.network.has_ended(message.execution_id)  # cancelled while its init ran
            if message.execution_id in self.executions:
                raise ValueError(f"execution {message.execution_id} is already initialised on member {self.index}")
            if not closed:
                self.executions[message.execution_id] = execution
        if closed:  # the coordinator gave up on this init (its deadline passed) and cancelled it
            execution.cleanup()
            raise JobCancelledError(f"execution {message.execution_id} of job {message.job_id} was cancelled on "
                                    f"member {self.index} before its init finished")
        log.info("job %s: execution %d initialised on member %d", message.job_id,
                 message.execution_id, self.index)
        # It starts at once, with no round of its own: a peer's frames that come before its own
        # init are held by the network until it registers.
        self.metrics.running.inc()
        execution.start()
        return {}

    def _execution(self, header: dict) -> JobExecution:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.get(execution_id)
        if execution is None:
            raise NotFoundError(f"no execution {execution_id} on member {self.index}")
        return execution

    def cancel(self, peer: int, header: dict, blob: bytes) -> dict:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.get(execution_id)
            if execution is None:  # its init failed or still runs here (it must not start), or it ended
                self.network.discard(execution_id)
                return {}
        origin = header.get("member")
        if header.get("by_client"):
            log.info("job %s: cancelled by the client", execution.job_id)
            execution.cancel("cancelled by the client")
            return {}
        if header.get("member_lost"):  # the cluster's failure, not the job's: the coordinator decides
            log.warning("job %s: execution %d is cancelled after a lost member: %s", execution.job_id,
                        execution.execution_id, header.get("reason", ""))
            execution.cancel(f"a member was lost: {header.get('reason', '')}")
            return {}
        if origin != self.index:
            log.error("job %s fails everywhere: the coordinator cancels it after a failure on member %s:\n%s",
                      execution.job_id, origin, header.get("reason", ""))
        execution.cancel(f"failure on member {origin}")
        return {}

    def complete(self, peer: int, header: dict, blob: bytes) -> dict:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.pop(execution_id, None)
            self._undelivered.pop(execution_id, None)
            if execution is None:
                self.network.discard(execution_id)
        if execution is not None:
            execution.cleanup()
            return_freed_memory()
        return {}

    def snapshot_phase1(self, peer: int, header: dict, blob: bytes) -> dict:
        """Save this member's state of the execution into the snapshot's slot; its figures, or
        ``error`` (a failed snapshot is the coordinator's to report, not this member's)."""
        execution = self._execution(header)
        snapshot_id = messages.require(header, "snapshot_id", int)
        try:
            if self._take_fault("fail_snapshot_phase1"):
                raise SnapshotError(f"fault injection: member {self.index} fails phase 1 of snapshot {snapshot_id}")
            return execution.snapshot_phase1(snapshot_id, messages.require(header, "slot", int),
                                             bool(header.get("terminal")), float(header.get("timeout_s", 60.0)))
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, which logs the failed snapshot
            log.info("job %s: phase 1 of snapshot %d failed on member %d: %s", execution.job_id, snapshot_id,
                     self.index, e)
            return {"error": f"{type(e).__name__}: {e}"}

    def snapshot_phase2(self, peer: int, header: dict, blob: bytes) -> dict:
        """Every live processor commits (or forgets) the snapshot's prepared work; ``error`` when not."""
        execution = self._execution(header)
        try:
            execution.snapshot_phase2(messages.require(header, "snapshot_id", int), bool(header.get("success")),
                                      float(header.get("timeout_s", 60.0)))
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, which logs it
            return {"error": f"{type(e).__name__}: {e}"}
        return {}

    def execution_metrics(self, peer: int, header: dict, blob: bytes) -> dict:
        execution = self._execution(header)
        if header.get("measurements"):
            return {"measurements": execution.packed_measurements()}
        return {"metrics": execution.figures()}

    def execution_state(self, peer: int, header: dict, blob: bytes) -> dict | tuple[dict, bytes]:
        """The coordinator asks after an execution it heard nothing from: still running, or
        finished with this report (the one that may have been lost)."""
        if self._take_fault("unanswered_state_queries"):
            self.stopped.wait(self.settings.control.control_timeout_ms / 1000 + 1.0)
            raise TimeoutError(f"fault injection: member {self.index} left a state query unanswered")
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:  # an answer the coordinator does not get fails this member there, named
            report = self._undelivered.pop(execution_id, None)
        if report is None:
            report = self._execution(header).report
        if report is None:
            return {"state": EXECUTION_RUNNING_STATE}
        return {**report[0], "state": EXECUTION_DONE_STATE}, report[1]

    def _take_fault(self, fault: str) -> bool:
        with self._lock:
            if self._faults[fault] <= 0:
                return False
            self._faults[fault] -= 1
            return True

    def report(self, outcome: ExecutionOutcome, execution: JobExecution) -> None:
        """On the execution's report thread: count it, then send its report to the coordinator."""
        self.metrics.running.dec()
        self.metrics.executions.labels("completed" if outcome.ok else "cancelled" if outcome.cancelled
                                       else "failed").inc()
        if not outcome.ok and self.stopped.is_set():
            # Cancelled because this member stops (a pod deleted): the coordinator counts the
            # member lost and restarts the job; a report would read as the job's own failure.
            log.debug("member %d is stopping; the cancellation of job %s is not reported", self.index,
                      outcome.job_id)
            return
        if outcome.cleaned_up:
            # Its report stays until delivered, for the coordinator's question after a lost one.
            with self._lock:
                self.executions.pop(execution.execution_id, None)
                self._undelivered[execution.execution_id] = execution.report
            execution.cleanup()
            return_freed_memory()
        # Sent from this report thread itself: one hand-over between threads per job, not two.
        self._send_report(outcome, execution.report_payload(), execution.execution_id)

    def _send_report(self, outcome: ExecutionOutcome, payload: bytes, execution_id: int) -> None:
        """Send an end report, retrying with backoff for ``report_retry_ms``; after that the
        coordinator asks for it (it stays in the execution, or in ``_undelivered``, until cleanup)."""
        retry_s = self.settings.control.report_retry_ms / 1000
        deadline = time.monotonic() + retry_s
        backoff_s, attempt = REPORT_FIRST_BACKOFF_S, 0
        while True:
            attempt += 1
            try:
                if self._take_fault("drop_reports"):
                    raise LinkError("fault injection: the report was dropped")
                self._send_to_coordinator(messages.EXECUTION_DONE, payload)
                with self._lock:
                    self._undelivered.pop(execution_id, None)
                return
            except Exception as e:  # noqa: BLE001 - retried; the coordinator asks after it anyway
                remaining = deadline - time.monotonic()
                if self.stopped.is_set():
                    # The whole member is going away (its cluster is shutting down, or it was
                    # told to stop): the coordinator counts it lost, which is not an error here.
                    log.info("member %d is stopping; the end of job %s was not reported: %s",
                             self.index, outcome.job_id, e)
                    return
                if remaining <= 0:
                    log.error("member %d could not report the end of job %s to the coordinator in %d attempts "
                              "over %.1f s: %s", self.index, outcome.job_id, attempt, retry_s, e)
                    return
                log.warning("member %d: report of job %s failed (attempt %d), retrying in %.2f s: %s",
                            self.index, outcome.job_id, attempt, min(backoff_s, remaining), e)
                self.stopped.wait(min(backoff_s, remaining))
                backoff_s = min(backoff_s * 2, REPORT_MAX_BACKOFF_S)
