"""The history of a JetJob's exported snapshots in ``status.snapshotExports`` (pure functions).

Flink's operator keeps a savepoint history bounded by ``savepointHistoryMaxCount`` and
``savepointHistoryMaxAge`` and disposes of the savepoints it drops. Here the history is
bounded by ``spec.snapshot.historyMaxCount`` and ``historyMaxAgeSeconds`` the same way, and an
export that leaves the history is deleted from the snapshot store through the job's member 0
(``JetClient.delete_snapshot``; one already gone counts as deleted). Until it is deleted it is
named in ``notDeleted`` (newest last, at most :data:`NOT_DELETED_MAX`): while member 0 does
not answer (the job is suspended, starting, or finished with its members removed) the operator
tries again at each later look at which the members may answer (:func:`members_may_answer`).

``status.snapshotExports``::

    total: 3                 # exports taken for this JetJob
    history: [{name, time, jobId, snapshotId, bytes, keys, nonce}, ...]   # oldest first
    notDeleted: [names]      # out of the history, not deleted from the store yet
    lastError: null          # why the last asked-for export failed, if it did
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Mapping

from jet_operator.lifecycle import TERMINAL_PHASES, Phase, format_time, parse_time
from jet_operator.spec import SnapshotExports

NOT_DELETED_MAX = 100


def export_name(job: str, number: int, now: datetime.datetime) -> str:
    """The name of the JetJob's export ``number`` asked for at ``now``:
    ``<job>-export-<YYYYMMDD-HHMMSS>-<number>`` (UTC; the time tells apart the exports of a
    JetJob deleted and made again, the number two asked for within a second)."""
    return f"{job}-export-{now.astimezone(datetime.timezone.utc).strftime('%Y%m%d-%H%M%S')}-{number}"


def exports_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``status.snapshotExports`` with every field present."""
    current = dict(status.get("snapshotExports") or {})
    return {
        "total": int(current.get("total") or 0),
        "history": [dict(entry) for entry in current.get("history") or []],
        "notDeleted": list(current.get("notDeleted") or []),
        "lastError": current.get("lastError"),
    }


def history_entry(figures: Mapping[str, Any], name: str, nonce: str | None, now: datetime.datetime) -> dict[str, Any]:
    """One export as the history keeps it, from the client's figures."""
    entry = {"name": str(figures.get("name") or name), "time": format_time(now), "nonce": nonce}
    for key in ("jobId", "snapshotId", "bytes", "keys"):
        if figures.get(key) is not None:
            entry[key] = figures[key]
    return entry


@dataclass(frozen=True)
class Pruned:
    """The history after its limits, and the exports to delete from the store."""

    exports: dict[str, Any]
    """``status.snapshotExports`` with the history pruned; its ``notDeleted`` names the exports
    to delete: those waiting from earlier looks, then those that left the history now."""
    expired: list[str]
    """The exports that left the history at this look."""


def prune(exports: Mapping[str, Any], limits: SnapshotExports, now: datetime.datetime) -> Pruned:
    """Keep the newest ``historyMaxCount`` exports no older than ``historyMaxAgeSeconds`` (0: any
    age); the others leave the history for ``notDeleted``, until they are deleted from the store."""
    history = sorted(exports.get("history") or [], key=lambda entry: entry.get("time") or "")
    if limits.history_max_age_seconds > 0:
        oldest = now - datetime.timedelta(seconds=limits.history_max_age_seconds)
        young = [entry for entry in history if (parse_time(entry.get("time")) or now) >= oldest]
    else:
        young = history
    kept = young[-limits.history_max_count:]
    expired = [entry["name"] for entry in history if entry not in kept]
    waiting = list(exports.get("notDeleted") or [])
    waiting += [name for name in expired if name not in waiting]
    return Pruned({**exports, "history": kept, "notDeleted": waiting[-NOT_DELETED_MAX:]}, expired)


def without_deleted(exports: Mapping[str, Any], deleted: list[str]) -> dict[str, Any]:
    """``exports`` with the exports deleted from the store (or gone already) out of ``notDeleted``."""
    return {**exports, "notDeleted": [name for name in exports.get("notDeleted") or [] if name not in deleted]}


def members_may_answer(status: Mapping[str, Any]) -> bool:
    """Whether the job's member 0 may answer a client: not while the job is suspended, nor once a
    finished job's members are removed (``membersUntil`` passed, or scaled to 0 at once)."""
    phase = Phase(status.get("phase") or Phase.PENDING.value)
    if phase == Phase.SUSPENDED:
        return False
    return phase not in TERMINAL_PHASES or bool(status.get("membersUntil"))


def _limits(limits: SnapshotExports) -> str:
    age = f", historyMaxAgeSeconds {limits.history_max_age_seconds}" if limits.history_max_age_seconds else ""
    return f"spec.snapshot historyMaxCount {limits.history_max_count}{age}"


def deleted_message(deleted: list[str], gone: list[str], limits: SnapshotExports) -> str:
    """The event that exports out of the history were deleted from the store."""
    already = f" ({', '.join(gone)} gone already)" if gone else ""
    return (f"exported snapshot(s) {', '.join(deleted)} deleted from the snapshot store{already}: out of the "
            f"history ({_limits(limits)})")


def not_deleted_message(names: list[str], reason: str, limits: SnapshotExports) -> str:
    """The Warning that exports left the history but could not be deleted from the store yet."""
    return (f"exported snapshot(s) {', '.join(names)} left the history ({_limits(limits)}) but could not be "
            f"deleted from the snapshot store: {reason}; they stay in status.snapshotExports.notDeleted and "
            "the operator deletes them at a later look, once the job's member 0 answers")
