"""What every job's coordination shares on member 0 (Jet's ``JobCoordinationService`` fields that
its ``MasterContext`` objects read).

One :class:`CoordinationContext` is made by the :class:`~.coordinator.JobCoordinator` and given
to the objects that coordinate each job (:class:`~.job_lifecycle.JobLifecycle`), each execution
(:class:`~.execution_driver.ExecutionDriver`), the client's requests
(:class:`~.job_control.JobControl`) and scaling (:class:`~.scale_up.JobScaling`). Its condition
guards every job's state (:class:`~.job_state.JobRun`, :class:`~.job_state.Execution`): hold it
to read or change them, and notify it after a change.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Callable

from jet.cluster.coordination.job_state import JobRecord, JobRun
from jet.cluster.coordination.job_store import JobStore
from jet.cluster.executions.control_settings import ControlSettings
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind

log = logging.getLogger("jet.cluster.coordination.coordinator")

MemberCall = Callable[[int, str, bytes, float], bytes]
"""``call(member, message type, payload, timeout_s) -> reply``; raises when the member cannot answer."""
StartCall = Callable[[int, str, bytes, float], Future]
"""The same call started: returns at once the future of its reply."""

CALL_SLACK_S = 2.0
"""Beyond a call's own deadline, how long the coordinator waits for its answer (a call to member 0
itself runs on that member's handlers' pool, with no transport deadline)."""
CLIENT_TASKLET = "client"
"""The ``tasklet`` of the outcome a client's cancel (or suspend, restart) records."""


class CoordinationContext:
    """The member calls, settings, clock, job store and status listener of the coordinator, the
    condition guarding all job state, and the members it has lost."""

    def __init__(self, member_count: int, call: MemberCall, start_call: StartCall, *, cooperative_threads: int,
                 control: ControlSettings, clock: Callable[[], float], job_store: JobStore,
                 on_status: Callable[[JobRecord], None] | None) -> None:
        self.member_count = member_count
        self.call = call
        """A control call to a member, answered (blocking)."""
        self.start_call = start_call
        """A control call to a member, started (the future of its answer)."""
        self.cooperative_threads = cooperative_threads
        self.control = control
        self.clock = clock
        self.job_store = job_store
        self.changed = threading.Condition()
        """Guards every job's state, :attr:`lost` and :attr:`shut_down`; notified on each change."""
        self.lost: dict[int, str] = {}
        """The members lost and not back yet, with why."""
        self.shut_down = False
        self._on_status = on_status

    @property
    def call_timeout_s(self) -> float:
        """The deadline of a control call other than ``init``."""
        return self.control.control_timeout_ms / 1000

    def up_members(self) -> list[int]:
        """The members not lost (the caller holds :attr:`changed`)."""
        return [m for m in range(self.member_count) if m not in self.lost]

    def status_changed(self, record: JobRecord) -> None:
        """A job's status changed: its stored copy and the listener are told."""
        self.job_store.update(record)
        self.notify(record)

    def notify(self, record: JobRecord) -> None:
        """Tell the status listener (the member's ``/job``, the operator) of the record."""
        if self._on_status is not None:
            try:
                self._on_status(record)
            except Exception:  # noqa: BLE001
                log.exception("job status listener failed")


def lost_member_outcome(run: JobRun, member: int, error: str) -> ExecutionOutcome:
    """The outcome that stands for ``member`` lost during the job's current execution."""
    return ExecutionOutcome(run.record.job_id, run.execution_id, member, ok=False,
                            error=f"MemberLostError: member {member} was lost: {error}",
                            tasklet=f"connection to member {member}", kind=FailureKind.MEMBER_LOST)


def client_outcome(run: JobRun, what: str) -> ExecutionOutcome:
    """The outcome a client's cancel (or suspend, restart) records."""
    return ExecutionOutcome(run.record.job_id, run.execution_id, 0, ok=False, cancelled=True,
                            error=f"JobCancelledError: {what}", tasklet=CLIENT_TASKLET, kind=FailureKind.CANCELLED)
