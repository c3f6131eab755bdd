"""The records the store keeps: a job's record and a snapshot's validation record."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class JobRecord:
    """What a coordinator needs to resume a job after a restart.

    ``dag`` is the pickled DAG (bytes, stored in its own file beside the JSON record).
    ``last_good_snapshot_id`` is -1 and ``last_good_slot`` is -1 while the job has no
    snapshot; ``ongoing_snapshot_id`` is the id of the snapshot being written, if any.
    """

    job_id: str
    name: str = ""
    creation_time: float = field(default_factory=time.time)
    dag: bytes = b""
    config: dict[str, Any] = field(default_factory=dict)
    status: str = "NOT_RUNNING"
    last_good_snapshot_id: int = -1
    last_good_slot: int = -1
    ongoing_snapshot_id: int = -1
    restarts: int = 0
    last_restart_cause: str = ""
    suspension_cause: str = ""
    snapshot_stats: dict[str, Any] = field(default_factory=dict)
    """The coordinator's figures of the job's snapshots (last one, count, failures)."""

    def to_json(self) -> str:
        """The record without its DAG bytes, as JSON."""
        data = dataclasses.asdict(self)
        del data["dag"]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, dag: bytes) -> JobRecord:
        """The record read back from :meth:`to_json` and its DAG bytes."""
        data = json.loads(text)
        return cls(dag=dag, **data)


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot's validation record: written last, so its presence marks a complete snapshot."""

    job_id: str
    job_name: str
    snapshot_id: int
    slot: int  # 0 or 1; -1 for an export
    chunk_count: int
    num_bytes: int
    num_keys: int
    created: float
    chunks: tuple[str, ...] = ()  # chunk file names relative to the snapshot directory
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["chunks"] = list(self.chunks)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SnapshotInfo:
        data = json.loads(text)
        data["chunks"] = tuple(data.get("chunks", ()))
        return cls(**data)
