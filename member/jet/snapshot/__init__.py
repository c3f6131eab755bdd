"""The snapshot store: job records, two alternating snapshot slots per job and named exports,
kept under one fsspec URL (a local directory, ``s3://bucket/prefix``, a mounted volume)."""

from jet.snapshot.errors import SnapshotError
from jet.snapshot.records import JobRecord, SnapshotInfo
from jet.snapshot.store import SnapshotStore, SnapshotWriter

__all__ = ["JobRecord", "SnapshotError", "SnapshotInfo", "SnapshotStore", "SnapshotWriter"]
