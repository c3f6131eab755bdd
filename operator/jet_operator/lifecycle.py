"""The JetJob's phase, decided from what the operator observes (pure functions only).

Phases, in the order a healthy job goes through them:

- ``Pending``: member pods do not exist yet or are not all scheduled;
- ``Starting``: members are scheduled, not all ready, or the coordinator has not started the job;
- ``Running``: the coordinator (member 0) reports the job RUNNING (a streaming job stays so until
  it is suspended or deleted: no completion is no hang, and nothing times it out);
- ``Completing``: the coordinator reports COMPLETING, or COMPLETED while a Spark driver is still
  running (the sink driver writes the job's output after the job has handed it over);
- ``Completed``: the coordinator reports COMPLETED and every Spark driver succeeded (members are
  then scaled to 0);
- ``Failed``: the job failed (its own error, a pod that cannot start, a Spark driver that failed);
- ``Suspended``: the user set ``spec.suspend: true`` (members scaled to 0; with a processing
  guarantee after a terminal snapshot).
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from jet_operator import constants
from jet_operator.spec import RESTART_ALWAYS, RESTART_NEVER, RestartPolicy


class Phase(str, enum.Enum):
    """``status.phase`` of a JetJob."""

    PENDING = "Pending"
    STARTING = "Starting"
    RUNNING = "Running"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    FAILED = "Failed"
    SUSPENDED = "Suspended"


TERMINAL_PHASES = frozenset({Phase.COMPLETED, Phase.FAILED})

# Job statuses (member 0's /job) after which the job does nothing more.
ENDED_JOB_STATUSES = frozenset({"COMPLETED", "FAILED"})

# How much of a failed container's termination message (its log's tail) goes into status.message.
FAILURE_MESSAGE_MAX_LINES = 12
FAILURE_MESSAGE_MAX_CHARS = 2000

# Container waiting reasons after which a pod will not start without a change by someone.
FAILING_WAIT_REASONS = frozenset({
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
})


def parse_time(value: str | None) -> datetime.datetime | None:
    """Parse a Kubernetes timestamp (RFC 3339, ``Z`` or offset) into an aware datetime."""
    if not value:
        return None
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(value: datetime.datetime) -> str:
    """Format an aware datetime the way Kubernetes does (seconds, ``Z``)."""
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class PodView:
    """What the operator needs to know about one pod."""

    name: str
    phase: str
    scheduled: bool
    ready: bool
    created: datetime.datetime | None
    waiting_reason: str | None = None
    waiting_message: str = ""
    unschedulable_message: str = ""
    attempt: str | None = None
    exit_code: int | None = None
    termination_message: str = ""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> "PodView":
        """Summarise a pod object as the API returns it."""
        metadata = pod.get("metadata") or {}
        status = pod.get("status") or {}
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        scheduled = conditions.get("PodScheduled", {})
        waiting_reason, waiting_message = None, ""
        terminated = _first_terminated(status.get("containerStatuses") or [])
        for container in status.get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason"):
                waiting_reason, waiting_message = waiting["reason"], waiting.get("message", "")
                if waiting_reason in FAILING_WAIT_REASONS:
                    break
        return cls(
            name=metadata.get("name", ""),
            phase=status.get("phase") or "Pending",
            scheduled=scheduled.get("status") == "True" or bool((pod.get("spec") or {}).get("nodeName")),
            ready=conditions.get("Ready", {}).get("status") == "True",
            created=parse_time(metadata.get("creationTimestamp")),
            waiting_reason=waiting_reason,
            waiting_message=waiting_message,
            unschedulable_message=scheduled.get("message", "") if scheduled.get("status") == "False" else "",
            attempt=(metadata.get("annotations") or {}).get(constants.ANNOTATION_ATTEMPT),
            exit_code=terminated.get("exitCode"),
            termination_message=str(terminated.get("message") or ""),
        )


def _first_terminated(containers: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The ``state.terminated`` of the first container that failed, else of the first that ended."""
    ended = [(c.get("state") or {}).get("terminated") for c in containers]
    ended = [t for t in ended if t]
    failed = [t for t in ended if t.get("exitCode") not in (0, None)]
    return (failed or ended or [{}])[0]


def failure_excerpt(termination_message: str) -> str:
    """The end of a failed container's termination message (with ``FallbackToLogsOnError``, its
    log's tail): the last lines, where a driver prints its error, without JVM stack frames."""
    lines = [line.rstrip() for line in termination_message.splitlines()]
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("at ")]
    excerpt = "\n".join(lines[-FAILURE_MESSAGE_MAX_LINES:])
    return excerpt[-FAILURE_MESSAGE_MAX_CHARS:]


def pod_failure(pod: PodView, now: datetime.datetime, scheduling_timeout_seconds: float) -> str | None:
    """Why ``pod`` will not run on its own, or None while it may still come up."""
    if pod.waiting_reason in FAILING_WAIT_REASONS:
        detail = f": {pod.waiting_message}" if pod.waiting_message else ""
        return f"pod {pod.name}: {pod.waiting_reason}{detail}"
    if pod.phase == "Failed":
        code = f" (exit code {pod.exit_code})" if pod.exit_code is not None else ""
        error = failure_excerpt(pod.termination_message)
        return f"pod {pod.name} failed{code}" + (f": {error}" if error else "")
    if pod.phase == "Pending" and pod.created is not None:
        waited = (now - pod.created).total_seconds()
        if waited > scheduling_timeout_seconds:
            detail = f": {pod.unschedulable_message}" if pod.unschedulable_message else ""
            return (
                f"pod {pod.name} still Pending after {int(waited)}s "
                f"(scheduling timeout {int(scheduling_timeout_seconds)}s){detail}"
            )
    return None


@dataclass(frozen=True)
class JobReport:
    """What member 0's ``GET /job`` says about the job."""

    job_id: str
    status: str
    message: str = ""
    start_time: str | None = None
    completion_time: str | None = None
    restarts: int = 0
    """Restarts of the job by its coordinator (from its last snapshot, after a member was lost)."""
    last_restart_cause: str | None = None
    processing_guarantee: str | None = None
    last_snapshot: Mapping[str, Any] | None = None
    """``{id, time, bytes, keys, durationMs}`` of the last completed snapshot."""
    snapshot_count: int = 0

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> "JobReport":
        """Read the endpoint's JSON body."""
        last_snapshot = data.get("lastSnapshot")
        return cls(
            job_id=str(data.get("jobId") or ""),
            status=str(data.get("status") or "NOT_RUNNING").upper(),
            message=str(data.get("message") or ""),
            start_time=data.get("startTime") or None,
            completion_time=data.get("completionTime") or None,
            restarts=int(data.get("restarts") or 0),
            last_restart_cause=data.get("lastRestartCause") or None,
            processing_guarantee=data.get("processingGuarantee") or None,
            last_snapshot=dict(last_snapshot) if isinstance(last_snapshot, Mapping) else None,
            snapshot_count=int(data.get("snapshotCount") or 0),
        )

    def status_fields(self) -> dict[str, Any]:
        """What the JetJob's status shows of the job's fault tolerance."""
        fields: dict[str, Any] = {
            "restarts": self.restarts,
            "lastRestartCause": self.last_restart_cause,
            "processingGuarantee": self.processing_guarantee,
            "snapshotCount": self.snapshot_count,
        }
        if self.last_snapshot is not None:
            snapshot = {key: self.last_snapshot[key] for key in ("id", "time", "bytes", "keys", "durationMs")
                        if self.last_snapshot.get(key) is not None}
            if isinstance(snapshot.get("time"), (int, float)):  # epoch milliseconds, as Jet keeps times
                snapshot["time"] = format_time(datetime.datetime.fromtimestamp(
                    snapshot["time"] / 1000, datetime.timezone.utc))
            fields["lastSnapshot"] = snapshot
        return fields


_PHASE_OF_JOB_STATUS = {
    "NOT_RUNNING": Phase.STARTING,
    "STARTING": Phase.STARTING,
    "RUNNING": Phase.RUNNING,
    "COMPLETING": Phase.COMPLETING,
    "COMPLETED": Phase.COMPLETED,
    "FAILED": Phase.FAILED,
}


@dataclass(frozen=True)
class Assessment:
    """The phase the job is in now, and why."""

    phase: Phase
    message: str
    ready: int


def assess(
    *,
    desired: int,
    member_pods: Sequence[PodView],
    spark_pods: Sequence[PodView],
    job: JobReport | None,
    now: datetime.datetime,
    scheduling_timeout_seconds: float,
) -> Assessment:
    """Decide the phase of a running (not suspended, not finished) job from one observation."""
    ready = sum(1 for pod in member_pods if pod.ready)
    if job is not None and job.status == "COMPLETED":
        return _assess_completed(spark_pods, ready, now, scheduling_timeout_seconds)
    if job is not None and job.status == "FAILED":
        return Assessment(Phase.FAILED, f"the job failed: {job.message}".rstrip(": "), ready)
    for pod in [*member_pods, *spark_pods]:
        failure = pod_failure(pod, now, scheduling_timeout_seconds)
        if failure is not None:
            return Assessment(Phase.FAILED, failure, ready)
    scheduled = sum(1 for pod in member_pods if pod.scheduled)
    if len(member_pods) < desired or scheduled < desired:
        return Assessment(
            Phase.PENDING, f"waiting for member pods to be scheduled ({scheduled}/{desired})", ready
        )
    if ready < desired:
        waiting = ", ".join(sorted(pod.name for pod in member_pods if not pod.ready))
        return Assessment(Phase.STARTING, f"members ready: {ready}/{desired} (not yet: {waiting})", ready)
    if job is None:
        return Assessment(Phase.STARTING, "waiting for the coordinator (member 0) to report", ready)
    phase = _PHASE_OF_JOB_STATUS.get(job.status, Phase.STARTING)
    name = f"job {job.job_id}" if job.job_id else "the job"
    detail = f": {job.message}" if job.message else ""
    return Assessment(phase, f"{name} is {job.status}{detail}", ready)


def _assess_completed(spark_pods: Sequence[PodView], ready: int, now: datetime.datetime,
                      scheduling_timeout_seconds: float) -> Assessment:
    """The job completed; so has the JetJob once every Spark driver succeeded (the sink driver
    writes the output the job handed over; a driver that fails now fails the JetJob)."""
    for pod in spark_pods:
        failure = pod_failure(pod, now, scheduling_timeout_seconds)
        if failure is not None:
            return Assessment(Phase.FAILED, failure, ready)
    running = [pod.name for pod in spark_pods if pod.phase != "Succeeded"]
    if running:
        return Assessment(Phase.COMPLETING,
                          f"the job completed; waiting for Spark driver(s) {', '.join(running)}", ready)
    return Assessment(Phase.COMPLETED, "the job completed", ready)


@dataclass(frozen=True)
class RestartDecision:
    """Whether to restart a finished job, after how long, and the message that says so.

    ``retries_used`` is ``status.retriesUsed`` after this decision: the restarts that followed
    a failure, the only ones ``maxRetries`` limits.
    """

    restart: bool
    delay_seconds: int
    message: str
    retries_used: int


def decide_restart(policy: RestartPolicy, retries_used: int, phase: Phase) -> RestartDecision:
    """Apply ``restartPolicy`` to a job that just ended in ``phase`` (Completed or Failed).

    ``retries_used`` counts the earlier restarts after a failure (``status.retriesUsed``, not
    ``status.restartCount``, which counts every restart). ``OnFailure`` restarts failed jobs
    while fewer than ``maxRetries`` retries are used; ``Always`` also restarts completed jobs,
    without a limit and without spending a retry (as a Deployment would); ``Never`` restarts
    nothing.
    """
    if policy.type == RESTART_NEVER:
        return RestartDecision(False, 0, "restartPolicy is Never", retries_used)
    if phase == Phase.COMPLETED:
        if policy.type == RESTART_ALWAYS:
            return RestartDecision(True, policy.backoff_seconds, "restartPolicy is Always", retries_used)
        return RestartDecision(False, 0, "the job completed", retries_used)
    if retries_used >= policy.max_retries:
        return RestartDecision(
            False, 0, f"no retry left ({retries_used}/{policy.max_retries} used)", retries_used
        )
    return RestartDecision(
        True,
        policy.backoff_seconds,
        f"retry {retries_used + 1}/{policy.max_retries} in {policy.backoff_seconds}s",
        retries_used + 1,
    )


_CONDITION_TRUE_IN = {
    "Ready": {Phase.RUNNING, Phase.COMPLETING},
    "Progressing": {Phase.PENDING, Phase.STARTING, Phase.COMPLETING},
    "Degraded": {Phase.FAILED},
}


def build_conditions(
    phase: Phase,
    message: str,
    previous: Sequence[Mapping[str, Any]],
    generation: int,
    now: datetime.datetime,
    restarting: bool = False,
) -> list[dict[str, Any]]:
    """The Ready/Progressing/Degraded conditions (metav1.Condition shape) for ``phase``.

    ``lastTransitionTime`` is kept from ``previous`` when a condition's status did not change.
    """
    before = {c.get("type"): c for c in previous}
    conditions = []
    for kind, true_in in _CONDITION_TRUE_IN.items():
        is_true = phase in true_in or (kind == "Progressing" and restarting)
        status = "True" if is_true else "False"
        old = before.get(kind) or {}
        conditions.append({
            "type": kind,
            "status": status,
            "observedGeneration": generation,
            "lastTransitionTime": (
                old["lastTransitionTime"]
                if old.get("status") == status and old.get("lastTransitionTime")
                else format_time(now)
            ),
            "reason": phase.value,
            "message": message,
        })
    return conditions
