"""How one member's execution ended, as it reports it to the coordinator, and what kind of failure
it was.

The kind is decided where the failure happens and travels as a field of the outcome, so the
coordinator's restart decision (:mod:`jet.cluster.coordination.job_restarts`) reads a fact, never
an error message: a job's function that raises ``ConnectionError`` is the job's failure
(:attr:`FailureKind.JOB`), a broken link between members (:class:`~jet.cluster.links.errors.LinkError`)
is a lost member's (:attr:`FailureKind.MEMBER_LOST`).
"""

from __future__ import annotations

import enum
import logging
import traceback
from dataclasses import asdict, dataclass
from typing import Any

import cloudpickle

from jet.cluster.links.errors import LinkError
from jet.cluster.links.packets import PacketFormatError
from jet.execution.errors import JobCancelledError, JobFailedError, MemberLostError
from jet.execution.measurements import PackedMeasurements, pack_measurements, packed_measurements_json

log = logging.getLogger("jet.cluster.executions.job_execution")


class FailureKind(str, enum.Enum):
    """What failed an execution (a ``str`` so the outcome's header stays JSON)."""

    NONE = ""
    """The execution succeeded."""
    JOB = "job"
    """The job's code or data: a function of the user's raised, a source or sink failed, the job
    could not be built. Fails the job (or suspends it with ``suspend_on_failure``)."""
    CANCELLED = "cancelled"
    """A client cancelled, suspended or restarted the job (or its terminal snapshot ended it)."""
    MEMBER_LOST = "member_lost"
    """A member of the execution was lost, or this member's link to one broke. Restartable."""
    NOT_CONNECTED = "not_connected"
    """The coordinator had no link to a member to start or steer the execution (a member that is
    rejoining). Restartable."""
    MEMBER_SILENT = "member_silent"
    """A member did not answer a control call or a question about its execution in time."""
    SNAPSHOT_DAMAGED = "snapshot_damaged"
    """The snapshot to restore is missing or damaged (a chunk gone, a checksum that does not
    match): the job is suspended, and its store's data is never deleted for it."""
    COORDINATOR = "coordinator"
    """The coordinator itself failed (a bug, or a damaged job record)."""

    @property
    def restartable(self) -> bool:
        """Whether the cluster, not the job, failed: the job may run again as it is."""
        return self in (FailureKind.MEMBER_LOST, FailureKind.NOT_CONNECTED)


@dataclass(frozen=True)
class ExecutionOutcome:
    """How one member's execution ended, as reported to the coordinator (JSON-safe)."""

    job_id: str
    execution_id: int
    member: int
    ok: bool
    cancelled: bool = False
    error: str = ""
    """``Type: message`` of the failure, empty when ``ok``."""
    traceback: str = ""
    tasklet: str = ""
    cleaned_up: bool = False
    kind: FailureKind = FailureKind.NONE
    """What failed the execution (set where the failure happened)."""
    """The member cleaned the execution up when it succeeded: it needs no ``complete``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", FailureKind(self.kind))  # a header's str too
        if not self.ok and self.kind is FailureKind.NONE:
            raise ValueError(f"a failed execution's outcome needs a FailureKind: {self.error}")

    def to_header(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value}

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> "ExecutionOutcome":
        fields = {k: header[k] for k in cls.__dataclass_fields__ if k in header}
        if fields.get("kind", "") not in {kind.value for kind in FailureKind}:
            raise PacketFormatError(f"an outcome's kind must be one of {[k.value for k in FailureKind]}, "
                                    f"got {fields['kind']!r}")
        return cls(**fields)

    @classmethod
    def of_failure(cls, job_id: str, execution_id: int, member: int,
                   failure: BaseException | None) -> "ExecutionOutcome":
        if failure is None:
            return cls(job_id, execution_id, member, ok=True)
        cause = failure.__cause__ if isinstance(failure, JobFailedError) and failure.__cause__ else failure
        text = getattr(failure, "traceback_text", "") or "".join(traceback.format_exception(failure))
        return cls(job_id, execution_id, member, ok=False,
                   cancelled=isinstance(failure, JobCancelledError),
                   error=f"{type(cause).__name__}: {cause}", traceback=text,
                   tasklet=getattr(failure, "tasklet", ""), kind=failure_kind(failure, cause))


def encode_report(outcome: ExecutionOutcome, results: dict[str, list], metrics: dict[str, dict[str, int]],
                  measurements: PackedMeasurements | None = None) -> tuple[dict[str, Any], bytes]:
    """The header and blob of an execution's end report (``execution_done``). The blob is the
    packed measurements as JSON (:func:`~jet.execution.measurements.packed_measurements_json`, its
    length in the header's ``measurements_bytes``), then the pickled results; results that
    cannot be pickled are left out with an error in the log (the job itself succeeded)."""
    pickled = b""
    if (outcome.ok or outcome.cancelled) and results:
        try:
            pickled = cloudpickle.dumps(results)
        except Exception as e:  # noqa: BLE001 - say why the results cannot travel
            log.error("job %s: the results on member %d cannot be pickled: %s", outcome.job_id, outcome.member, e)
    packed = packed_measurements_json(measurements or pack_measurements([]))
    return {**outcome.to_header(), "metrics": metrics, "measurements_bytes": len(packed)}, packed + pickled


class PickledResults:
    """A member's named results as its report carried them, pickled: the coordinator keeps them so
    (a few bytes an item, not a Python object each, and their size known) and unpickles them
    only when a client asks (:meth:`load`)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    @property
    def size_bytes(self) -> int:
        return len(self.data)

    def load(self) -> dict[str, list]:
        return cloudpickle.loads(self.data) if self.data else {}

    @classmethod
    def of(cls, results: dict[str, list]) -> "PickledResults":
        return cls(cloudpickle.dumps(results) if results else b"")


def merge_results(parts: list[PickledResults]) -> dict[str, list]:
    """Every member's named results (in member order) as one list per name."""
    merged: dict[str, list] = {}
    for part in parts:
        for name, items in part.load().items():
            merged.setdefault(name, []).extend(items)
    return merged


def decode_report(header: dict[str, Any], blob: bytes
                  ) -> tuple[ExecutionOutcome, PickledResults, dict[str, dict[str, int]], bytes]:
    """Inverse of :func:`encode_report` (the blob comes from an authenticated member); the
    results stay pickled and the measurements JSON bytes (the coordinator decodes them only
    when asked)."""
    length = header.get("measurements_bytes", 0)
    if type(length) is not int or not 0 <= length <= len(blob):
        raise PacketFormatError(f"an end report's measurements_bytes must be 0..{len(blob)} (the blob's "
                                f"length), got {length!r}")
    pickled = blob[length:]
    return (ExecutionOutcome.from_header(header), PickledResults(bytes(pickled)),
            header.get("metrics") or {}, bytes(blob[:length]))


def failure_kind(failure: BaseException, cause: BaseException) -> FailureKind:
    """The kind of a failure raised in a member's execution (``cause``: what it wraps)."""
    if isinstance(failure, JobCancelledError):
        return FailureKind.CANCELLED
    if isinstance(failure, MemberLostError) or isinstance(cause, LinkError):
        return FailureKind.MEMBER_LOST
    return FailureKind.JOB
