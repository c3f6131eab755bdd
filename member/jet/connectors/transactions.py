"""Jet's ``UnboundedTransactionsProcessorUtility``: a sink's transactions through the two
snapshot phases.

A sink processor finishes a transaction (a file, a batch staged in a database, ...) whenever it
likes; a finished one is *pending*. Phase 1 of a snapshot records every pending transaction
under ``BroadcastKey((tag, owner index, number))``; phase 2 (success) commits the ones that
snapshot recorded. Transactions finished between the phases wait for the next snapshot, and
after a failed snapshot the next one records them again. A restore sends every entry to every
processor of the vertex; each commits those whose owner index maps to it (``index % total ==
own index``), so a job restored on fewer processors still commits them all. Committing must be
idempotent: phase 2 may have run before the job was lost.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.outbox import Outbox
from jet.core.processors.snapshot_state import SnapshotSaver
from jet.core.snapshot_keys import BroadcastKey


def has_tag(key: Any, tag: str) -> bool:
    """Whether a snapshot key is a ``BroadcastKey((tag, ...))``."""
    return type(key) is BroadcastKey and type(key.key) is tuple and key.key[:1] == (tag,)


class UnboundedTransactions:
    """The pending transactions of one sink processor (see the module docstring)."""

    def __init__(self, tag: str, commit_fn: Callable[[Any], None]) -> None:
        self.tag = tag
        self._commit = commit_fn
        self.pending: list[tuple[int, int, Any]] = []  # (owner index, number, transaction)
        self._prepared = 0  # how many of ``pending`` the snapshot in progress recorded
        self._saver = SnapshotSaver()

    def finished(self, index: int, number: int, txn: Any) -> None:
        """Transaction ``txn`` (number ``number`` of processor ``index``) waits for a snapshot."""
        self.pending.append((index, number, txn))

    @property
    def recording(self) -> bool:
        """True while a :meth:`prepare` that the outbox refused goes on (call it again)."""
        return self._saver.saving

    def prepare(self, outbox: Outbox) -> bool:
        """Phase 1: record every pending transaction in the snapshot; False when the outbox took
        only some (the engine calls ``snapshot_commit_prepare`` again): after snapshots that
        failed, more may wait than one call may offer."""
        tag = self.tag
        if not self._saver.offer(outbox, lambda: ((BroadcastKey((tag, index, number)), txn)
                                                  for index, number, txn in self.pending)):
            return False
        self._prepared = len(self.pending)
        return True

    def finish(self, success: bool) -> None:
        """Phase 2: commit what the snapshot recorded, or keep it for the next snapshot."""
        if success:
            for _, _, txn in self.pending[:self._prepared]:
                self._commit(txn)
            del self.pending[:self._prepared]
        self._prepared = 0

    def commit_all(self) -> None:
        """The processor completed: no snapshot follows, so commit every pending transaction."""
        for _, _, txn in self.pending:
            self._commit(txn)
        self.pending.clear()
        self._prepared = 0

    def restore(self, key: BroadcastKey, txn: Any, own_index: int, total: int) -> None:
        """A recorded transaction from the restored snapshot: commit it if this processor owns it."""
        if key.key[1] % total == own_index:
            self._commit(txn)
