"""What the coordinator keeps of a job: its status, its public record and its executions.

A job's life (Jet's ``JobStatus``; a cancelled job ends FAILED with ``JobCancelledError``)::

    NOT_RUNNING   submitted and validated, or waiting to be restarted
    STARTING      a new execution id; ``init`` sent to every member
    RUNNING       every member initialised (each starts within its ``init``); snapshots on schedule
    SUSPENDED     stopped with its last good snapshot kept (``suspend()``, a lost member
                  without ``auto_scaling``, a failure with ``suspend_on_failure``); ``resume()``
                  starts a new execution from that snapshot
    SUSPENDED_EXPORTING_SNAPSHOT  a suspended job whose last snapshot is being exported
    COMPLETING    the last execution ended; ``complete`` (cleanup) sent to every member
    COMPLETED     every member completed its execution
    FAILED        a failure that is not restarted, or a cancel
"""

from __future__ import annotations

import enum
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from jet.cluster.executions.observables import observable_names
from jet.cluster.executions.outcome import ExecutionOutcome
from jet.core.dag import DAG
from jet.execution.errors import JobCancelledError, JobFailedError
from jet.job_config import JobConfig


class JobStatus(enum.Enum):
    """Jet's job states."""

    NOT_RUNNING = "NOT_RUNNING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUSPENDED_EXPORTING_SNAPSHOT = "SUSPENDED_EXPORTING_SNAPSHOT"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"

    @property
    def is_terminal(self) -> bool:
        return self in (JobStatus.COMPLETED, JobStatus.FAILED)

    @property
    def is_suspended(self) -> bool:
        return self in (JobStatus.SUSPENDED, JobStatus.SUSPENDED_EXPORTING_SNAPSHOT)


class JobConfigError(ValueError):
    """A job's config that this cluster cannot run (a guarantee without a snapshot store, an
    initial snapshot that does not exist); refused at submission."""


class JobStateError(RuntimeError):
    """A job operation that the job's current status does not allow (resume a running job, ...)."""


class Termination(enum.Enum):
    """What a user asked of a running job (Jet's ``TerminationMode``)."""

    SUSPEND = "suspend"
    RESTART = "restart"
    CANCEL = "cancel"
    CANCEL_AND_EXPORT = "cancel_and_export"


def new_job_id() -> str:
    """A job id as Jet prints one: four groups of four hex digits."""
    return "-".join(f"{secrets.randbits(16):04x}" for _ in range(4))


def iso_time(timestamp: float | None) -> str | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def describe_failure(failure: ExecutionOutcome) -> str:
    """A failure with where it happened and its traceback."""
    return f"{failure.error} (on member {failure.member}, in {failure.tasklet or '?'})\n{failure.traceback}"


@dataclass
class SnapshotStats:
    """A job's snapshot figures: the last successful one, the count, the failures."""

    last_id: int = -1
    last_time: float | None = None
    last_bytes: int = 0
    last_keys: int = 0
    last_duration_ms: int = 0
    count: int = 0
    failures: int = 0
    last_failure: str = ""

    def to_header(self) -> dict[str, Any] | None:
        """``{id, time, bytes, keys, durationMs}`` of the last snapshot, or None."""
        if self.last_id < 0:
            return None
        return {"id": self.last_id, "time": iso_time(self.last_time), "bytes": self.last_bytes,
                "keys": self.last_keys, "durationMs": self.last_duration_ms}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "SnapshotStats":
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in (data or {}).items() if k in known})


@dataclass
class JobRecord:
    """What the coordinator knows of one job; ``to_header()`` is what clients and ``/job`` see."""

    job_id: str
    name: str
    status: JobStatus = JobStatus.NOT_RUNNING
    submission_time: float = field(default_factory=time.time)
    start_time: float | None = None
    execution_start_time: float | None = None
    """When its current (or last) execution started: its figures count from there."""
    completion_time: float | None = None
    failure: ExecutionOutcome | None = None
    config: JobConfig = field(default_factory=JobConfig)
    restarts: int = 0
    last_restart_cause: str = ""
    suspension_cause: str = ""
    snapshots: SnapshotStats = field(default_factory=SnapshotStats)
    members: list[int] = field(default_factory=list)
    """The members of its current (or last) execution."""

    @property
    def message(self) -> str:
        """The failure with its traceback when FAILED, else empty."""
        return "" if self.failure is None else describe_failure(self.failure)

    def to_header(self) -> dict[str, Any]:
        failure = self.failure
        message = self.message if self.status is JobStatus.FAILED else (
            self.suspension_cause if self.status.is_suspended else "")
        return {"jobId": self.job_id, "name": self.name, "status": self.status.value, "message": message,
                "submissionTime": iso_time(self.submission_time), "startTime": iso_time(self.start_time),
                "executionStartTime": iso_time(self.execution_start_time),
                "completionTime": iso_time(self.completion_time),
                "failure": None if failure is None else failure.to_header(),
                "processingGuarantee": self.config.processing_guarantee.value,
                "restarts": self.restarts, "lastRestartCause": self.last_restart_cause,
                "suspensionCause": self.suspension_cause, "lastSnapshot": self.snapshots.to_header(),
                "snapshotCount": self.snapshots.count, "snapshotFailures": self.snapshots.failures,
                "members": list(self.members)}


class Execution:
    """One execution of a job over the cluster, guarded by the coordinator's condition."""

    def __init__(self, execution_id: int, members: Sequence[int]) -> None:
        self.id = execution_id
        self.members = members
        """The members that run it (physical indices, ascending): all that are up, for a job
        with ``auto_scaling``."""
        self.awaiting: set[int] = set()
        """Members whose outcome of this execution is still due."""
        self.init_sent = False
        """Whether every member was sent its ``init`` (each starts its part within it)."""
        self.cleaned_up: set[int] = set()
        """Members that cleaned their part up after it succeeded (they need no ``complete``)."""
        self.failure: ExecutionOutcome | None = None
        """The first failure of this execution (a cancel counts)."""
        self.lost: set[int] = set()
        """Members lost while this execution ran."""
        self.results: dict[int, dict[str, list]] = {}
        self.final_metrics: dict[int, dict[str, dict[str, int]]] = {}
        self.final_measurements: dict[int, dict | bytes] = {}
        """Each finished member's last measurements, packed (:func:`jet.execution.measurements.pack_measurements`),
        or the JSON bytes of its report (:func:`~jet.execution.measurements.packed_measurements_json`)."""
        self.snapshots: Any = None
        """Its :class:`~jet.cluster.coordination.snapshot_coordinator.SnapshotCoordinator`, with a guarantee."""


class JobRun:
    """One job's coordination state, guarded by the coordinator's condition."""

    def __init__(self, record: JobRecord, dag: DAG, dag_bytes: bytes) -> None:
        self.record = record
        self.dag = dag
        self.dag_bytes = dag_bytes
        self.execution: Execution | None = None
        self.requested: Termination | None = None
        """A user's request to the running execution, until the job acts on it."""
        self.export_name: str | None = None
        """The export a CANCEL_AND_EXPORT asked for."""
        self.resume_requested = False
        self.restart_cause = ""
        """Why a RESTART was requested when not by the client (scaling up), until acted on."""
        self.results_released = False
        """Its finished execution's results were released (``max_finished_result_bytes``, or
        ``fetched_result_ttl_s`` after a client fetched them)."""
        self.results_fetched_at: float | None = None
        """When a client first fetched its finished execution's results."""
        self.observable_names = observable_names(dag)
        """The names of the job's observable sinks."""

    @property
    def config(self) -> JobConfig:
        return self.record.config

    def release_finished(self) -> None:
        """The job ended: what only a run needs goes. Its DAG stays while the job is kept (up
        to ``max_finished_jobs``, ``finished_job_ttl_s``) for its dashboard page, which draws its
        shape; the pickled DAG and the processor suppliers, which may hold a source's items or
        a lookup table, go."""
        self.dag_bytes = None
        for vertex in self.dag.vertices:
            vertex.processor_supplier = _released_processor_supplier

    @property
    def execution_id(self) -> int:
        return 0 if self.execution is None else self.execution.id


def _released_processor_supplier() -> Any:
    raise JobStateError("the job has finished: its DAG keeps its shape only, its processors were released")


def job_failure(info: Mapping[str, Any]) -> JobFailedError:
    """The error a FAILED job's record stands for, with ``member_index`` set."""
    failure = info.get("failure") or {}
    kind = JobCancelledError if failure.get("cancelled") else JobFailedError
    error = kind(f"job {info.get('name')} ({info.get('jobId')}) failed: {info.get('message')}",
                 tasklet=failure.get("tasklet", ""), traceback_text=failure.get("traceback", ""))
    error.member_index = failure.get("member")
    return error
