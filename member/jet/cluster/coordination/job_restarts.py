"""What a job does when an execution ends (Jet's ``finalizeJob`` order, ``reference`` 5.6).

1. a user's request: RESTART runs a new execution, SUSPEND suspends, CANCEL (and
   CANCEL_AND_EXPORT, after its export) fails the job as cancelled;
2. no failure: the job completed;
3. a *restartable* failure (a member was lost or its link broke, by the failure's
   :class:`~jet.cluster.executions.outcome.FailureKind`): wait up to
   ``member_rejoin_timeout_ms`` for the lost members, then restart (from the last good snapshot;
   a job without a guarantee from scratch); when they are not back, a job with ``auto_scaling``
   restarts on the members that are up (and scales up when members join later), one without
   ``auto_scaling`` but with a guarantee is suspended;
4. a snapshot that cannot be restored (missing, damaged): suspended, its store's data kept;
5. any failure with ``suspend_on_failure``: suspended, its cause kept;
6. otherwise the job failed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from jet.cluster.coordination.job_state import Termination
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind
from jet.job_config import JobConfig


class Next(enum.Enum):
    """What the job does next."""

    COMPLETE = "complete"
    FAIL = "fail"
    RESTART = "restart"
    RESTART_AFTER_REJOIN_WAIT = "wait for the lost members, then restart"
    SUSPEND = "suspend"


@dataclass(frozen=True)
class Decision:
    next: Next
    cause: str = ""
    """Why: the restart's or the suspension's cause, shown in the job's record."""
    suspend_if_not_whole: bool = False
    """With RESTART_AFTER_REJOIN_WAIT: suspend when the wait for the members runs out (no
    auto-scaling), rather than restarting on the members that are up."""


def is_restartable(failure: ExecutionOutcome, lost_members: set[int]) -> bool:
    """Whether an execution's failure came from the cluster, not the job: a member lost while it
    ran, or a failure whose kind says a member was lost or could not be reached (never read from
    the error's text: a job's own ``ConnectionError`` fails the job)."""
    return bool(lost_members) or failure.kind.restartable


def decide(config: JobConfig, requested: Termination | None, failure: ExecutionOutcome | None,
           lost_members: set[int], restart_cause: str = "") -> Decision:
    """The job's next step after an execution ended with ``failure`` (None: it completed);
    ``restart_cause``: why a RESTART was requested when the client did not ask (scaling up)."""
    if requested is Termination.RESTART:
        return Decision(Next.RESTART, restart_cause or "restart requested")
    if requested is Termination.SUSPEND:
        return Decision(Next.SUSPEND, "suspended by the client")
    if requested in (Termination.CANCEL, Termination.CANCEL_AND_EXPORT):
        return Decision(Next.FAIL)
    if failure is None:
        return Decision(Next.COMPLETE)
    if failure.kind is FailureKind.SNAPSHOT_DAMAGED:  # never failed (nor its store cleared) for it
        return Decision(Next.SUSPEND, f"{failure.error}; resume it from the snapshot before it with "
                                      f"`jet job resume --older-snapshot` (docs/fault-tolerance.md), or cancel it")
    cause = f"{failure.error} (on member {failure.member})"
    if is_restartable(failure, lost_members):
        if lost_members:
            cause = f"member(s) {', '.join(map(str, sorted(lost_members)))} lost: {_lost_detail(failure)}"
        if config.auto_scaling:
            return Decision(Next.RESTART_AFTER_REJOIN_WAIT, cause)
        if config.processing_guarantee.snapshots:
            return Decision(Next.RESTART_AFTER_REJOIN_WAIT, cause, suspend_if_not_whole=True)
    if config.suspend_on_failure:
        return Decision(Next.SUSPEND, cause)
    return Decision(Next.FAIL)


def _lost_detail(failure: ExecutionOutcome) -> str:
    """What the lost member's failure said: ``stream ... broke`` of ``MemberLostError: member 1
    was lost: stream ... broke``."""
    error = failure.error
    if failure.kind is FailureKind.MEMBER_LOST:
        error = error.split(": ", 1)[-1]
        if error.startswith("member ") and " was lost: " in error:
            error = error.split(" was lost: ", 1)[1]
    return error
