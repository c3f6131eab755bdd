"""Exactly-once output files: Jet's ``UnboundedTransactionsProcessorUtility`` for the file sink.

One file is one transaction. A processor writes into ``.<name>.tmp`` (dot-prefixed, so the
globs ``*``, ``part-*`` and ``*.jsonl`` of readers, Python's ``glob`` and Spark's file listing
all skip it); a finished file is *pending*. Phase 1 of a snapshot finishes the active file
and records every pending one under ``BroadcastKey(("file-txn", global_index, sequence))``;
phase 2 (success) renames the files that snapshot recorded to their final names with
``os.replace``, which is atomic, so a reader sees a whole file or none. A restore renames the
recorded files of every processor index that maps to this processor (``index % total ==
own index``, so a smaller cluster still commits them all) and deletes the in-progress files of
those indices that no snapshot covers: their items are replayed from the restored sources.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from jet.core.outbox import Outbox
from jet.core.snapshot_keys import BroadcastKey

TXN_TAG = "file-txn"
SEQUENCE_TAG = "file-seq"
TEMP_PREFIX, TEMP_SUFFIX = ".", ".tmp"


class FileNames:
    """Names of the files of one sink: ``part-<index>[-<sequence>]<suffix>``, 5 digits each."""

    def __init__(self, directory: str, suffix: str, sequenced: bool) -> None:
        self.directory = directory
        self.suffix = suffix
        self.sequenced = sequenced
        self._pattern = re.compile(rf"^(\.?)part-(\d+)-(\d+){re.escape(suffix)}((?:\.tmp)?)$")

    def final(self, index: int, sequence: int) -> str:
        """The name readers see."""
        name = f"part-{index:05d}"
        if self.sequenced:
            name += f"-{sequence:05d}"
        return name + self.suffix

    def path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def temp_path(self, name: str) -> str:
        """Where the file named ``name`` is written until it is committed."""
        return os.path.join(self.directory, TEMP_PREFIX + name + TEMP_SUFFIX)

    def existing(self) -> list[tuple[int, int, bool]]:
        """(index, sequence, is in-progress) of every sequenced file of this sink in the directory."""
        found = []
        for entry in os.listdir(self.directory):
            match = self._pattern.match(entry)
            if match and bool(match.group(1)) == bool(match.group(4)):
                found.append((int(match.group(2)), int(match.group(3)), bool(match.group(1))))
        return found

    def next_sequence(self, index: int) -> int:
        """One past the highest sequence of ``index`` in the directory (committed or not)."""
        return max((seq + 1 for owner, seq, _ in self.existing() if owner == index), default=0)


class FileTransactions:
    """The pending (finished, uncommitted) files of one exactly-once file sink processor."""

    def __init__(self, names: FileNames, logger: logging.Logger) -> None:
        self._names = names
        self._logger = logger
        self.pending: list[tuple[int, int, str]] = []  # (owner index, sequence, final name)
        self._prepared = 0  # how many of ``pending`` the snapshot in progress recorded

    def finished(self, index: int, sequence: int, name: str) -> None:
        """The file ``name`` is closed: it waits for the next snapshot to be committed."""
        self.pending.append((index, sequence, name))

    def prepare(self, outbox: Outbox) -> None:
        """Phase 1: record every pending file (a failed snapshot's too) in the snapshot."""
        for index, sequence, name in self.pending:
            outbox.offer_to_snapshot(BroadcastKey((TXN_TAG, index, sequence)), name)
        self._prepared = len(self.pending)

    def finish(self, success: bool) -> None:
        """Phase 2: commit the files the snapshot recorded (files finished since wait for the
        next one); after a failed snapshot they stay pending and the next one records them."""
        if success:
            for _, _, name in self.pending[:self._prepared]:
                self.commit(name)
            del self.pending[:self._prepared]
        self._prepared = 0

    def commit_all(self) -> None:
        """The processor completed: no snapshot follows, so commit every pending file now."""
        for _, _, name in self.pending:
            self.commit(name)
        self.pending.clear()
        self._prepared = 0

    def commit(self, name: str) -> None:
        """Make ``name`` visible; a file already committed (phase 2 ran before a restart) is
        left alone, a missing one is logged: its items are lost."""
        try:
            os.replace(self._names.temp_path(name), self._names.path(name))
        except FileNotFoundError:
            if not os.path.exists(self._names.path(name)):
                self._logger.warning("file sink: the prepared file %r is missing (neither %s nor %s exists); "
                                     "its items are lost", name, self._names.temp_path(name),
                                     self._names.path(name))

    def remove_uncovered(self, own_index: int, total: int) -> int:
        """Delete the in-progress files of the indices this processor owns (``index % total``);
        call it after the restore committed the ones a snapshot covers. Returns how many."""
        removed = 0
        for index, sequence, in_progress in self._names.existing():
            if in_progress and index % total == own_index:
                try:
                    os.remove(self._names.temp_path(self._names.final(index, sequence)))
                    removed += 1
                except FileNotFoundError:
                    pass
        if removed:
            self._logger.info("file sink: removed %d in-progress file(s) no snapshot covers", removed)
        return removed


def restored_txn(key: Any, value: Any, own_index: int, total: int) -> str | None:
    """The final name a restored entry asks this processor to commit, or None (not its own)."""
    if key.key[1] % total == own_index:
        return value
    return None


def is_file_sink_key(key: Any, tag: str) -> bool:
    """Whether a snapshot key is one of the file sink's ``tag`` entries."""
    return type(key) is BroadcastKey and type(key.key) is tuple and key.key[:1] == (tag,)
