"""The history of a JetJob's exported snapshots in ``status.snapshotExports`` (pure functions).

Flink's operator keeps a savepoint history bounded by ``savepointHistoryMaxCount`` and
``savepointHistoryMaxAge`` and disposes of the savepoints it drops. Here the history is
bounded by ``spec.snapshot.historyMaxCount`` and ``historyMaxAgeSeconds`` the same way, but
an export that leaves the history stays in the snapshot store: the engine's client
(``jet.cluster.client``) has no call that deletes an export, so the operator cannot. Such
exports are named in ``notDeleted`` (newest last, at most :data:`NOT_DELETED_MAX`) and in a
Warning event, for someone to delete from the store by hand.
TODO(engine): a client call to delete an export (the store has ``delete_export``); then
delete them here and drop ``notDeleted``.

``status.snapshotExports``::

    total: 3                 # exports taken for this JetJob
    history: [{name, time, jobId, snapshotId, bytes, keys, nonce}, ...]   # oldest first
    notDeleted: [names]      # out of the history, still in the store
    lastError: null          # why the last asked-for export failed, if it did
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Mapping

from jet_operator.lifecycle import format_time, parse_time
from jet_operator.spec import SnapshotExports

NOT_DELETED_MAX = 100
CLIENT_DELETES_EXPORTS = False
"""Whether the engine's client can delete an export (it cannot yet; see the module docstring)."""


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
    """The history after its limits, and the exports that left it."""

    exports: dict[str, Any]
    expired: list[str]


def prune(exports: Mapping[str, Any], limits: SnapshotExports, now: datetime.datetime) -> Pruned:
    """Keep the newest ``historyMaxCount`` exports no older than ``historyMaxAgeSeconds`` (0: any
    age); the others leave the history (and, as the client cannot delete them, are named in
    ``notDeleted``)."""
    history = sorted(exports.get("history") or [], key=lambda entry: entry.get("time") or "")
    if limits.history_max_age_seconds > 0:
        oldest = now - datetime.timedelta(seconds=limits.history_max_age_seconds)
        young = [entry for entry in history if (parse_time(entry.get("time")) or now) >= oldest]
    else:
        young = history
    kept = young[-limits.history_max_count:]
    expired = [entry["name"] for entry in history if entry not in kept]
    result = {**exports, "history": kept}
    if expired and not CLIENT_DELETES_EXPORTS:
        result["notDeleted"] = (list(exports.get("notDeleted") or []) + expired)[-NOT_DELETED_MAX:]
    return Pruned(result, expired)


def expired_message(expired: list[str], limits: SnapshotExports) -> str:
    """The Warning that exports left the history but stay in the store."""
    age = (f", historyMaxAgeSeconds {limits.history_max_age_seconds}" if limits.history_max_age_seconds
           else "")
    return (f"exported snapshot(s) {', '.join(expired)} left the history (spec.snapshot historyMaxCount "
            f"{limits.history_max_count}{age}) but stay in the snapshot store: the engine's client cannot "
            "delete exports yet; delete exports/<name> from the store by hand (status.snapshotExports.notDeleted)")
