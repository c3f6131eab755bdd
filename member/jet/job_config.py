"""A job's configuration (Jet's ``JobConfig``) and its processing guarantee."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping


class ProcessingGuarantee(enum.Enum):
    """What a job promises when a member is lost (Jet's ``ProcessingGuarantee``).

    NONE: no snapshots; a restarted job starts from the beginning. AT_LEAST_ONCE: snapshots
    without aligning barriers, so items may be processed again after a restart. EXACTLY_ONCE:
    aligned barriers, so every item affects the state and the two-phase sinks exactly once.
    """

    NONE = "NONE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    EXACTLY_ONCE = "EXACTLY_ONCE"

    @classmethod
    def parse(cls, value: "ProcessingGuarantee | str") -> "ProcessingGuarantee":
        """A guarantee from itself or its name in any case, with - or _ (``exactly-once``)."""
        if isinstance(value, cls):
            return value
        text = str(value).strip().upper().replace("-", "_")
        try:
            return cls[text]
        except KeyError:
            raise ValueError(f"processing_guarantee must be one of none, at-least-once, exactly-once; "
                             f"got {value!r}") from None

    @property
    def snapshots(self) -> bool:
        """Whether jobs with this guarantee take snapshots."""
        return self is not ProcessingGuarantee.NONE


@dataclass(frozen=True)
class JobConfig:
    """How a job runs: ``new_job(pipeline, JobConfig(...))``.

    ``snapshot_interval_ms`` counts from the end of one snapshot to the start of the next.
    ``auto_scaling``: after a member is lost, go on with the members left once the wait for
    its return runs out (else the job is suspended). ``suspend_on_failure``: a failing job
    is suspended (its last snapshot kept) instead of failed. ``initial_snapshot_name``: start
    from this exported snapshot (the upgrade path), until the job's own first snapshot.
    ``metrics_enabled`` (Jet's ``JobConfig.setMetricsEnabled``, default True): False skips the
    counting that only metrics need (inbox batches, back-pressure time, items per outbound
    ordinal); the items received and emitted, watermarks and distributed-edge counts stay.
    """

    name: str | None = None
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE
    snapshot_interval_ms: int = 10_000
    auto_scaling: bool = True
    suspend_on_failure: bool = False
    initial_snapshot_name: str | None = None
    metrics_enabled: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "processing_guarantee", ProcessingGuarantee.parse(self.processing_guarantee))
        if isinstance(self.snapshot_interval_ms, bool) or not isinstance(self.snapshot_interval_ms, int) \
                or self.snapshot_interval_ms < 1:
            raise ValueError(f"snapshot_interval_ms must be a whole number of milliseconds >= 1, "
                             f"got {self.snapshot_interval_ms!r}")
        for name in ("auto_scaling", "suspend_on_failure", "metrics_enabled"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in ("name", "initial_snapshot_name"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (what travels to the coordinator and into the job record)."""
        data = asdict(self)
        data["processing_guarantee"] = self.processing_guarantee.value
        return data

    @classmethod
    def of(cls, config: "JobConfig | Mapping[str, Any] | None") -> "JobConfig":
        """A JobConfig from itself, a mapping of its fields (unknown names refused), or None."""
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"unknown job config field(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(sorted(known))}")
        return cls(**dict(config))
