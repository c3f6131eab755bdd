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
The phases themselves are :class:`jet.connectors.transactions.UnboundedTransactions`.
"""

from __future__ import annotations

import logging
import os
import re

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


def commit_file(names: FileNames, name: str, logger: logging.Logger) -> None:
    """Make ``name`` visible; a file already committed (phase 2 ran before a restart) is left
    alone, a missing one is logged: its items are lost."""
    try:
        os.replace(names.temp_path(name), names.path(name))
    except FileNotFoundError:
        if not os.path.exists(names.path(name)):
            logger.warning("file sink: the prepared file %r is missing (neither %s nor %s exists); "
                           "its items are lost", name, names.temp_path(name), names.path(name))


def remove_uncovered(names: FileNames, own_index: int, total: int, logger: logging.Logger) -> int:
    """Delete the in-progress files of the indices this processor owns (``index % total``);
    call it after the restore committed the ones a snapshot covers. Returns how many."""
    removed = 0
    for index, sequence, in_progress in names.existing():
        if in_progress and index % total == own_index:
            try:
                os.remove(names.temp_path(names.final(index, sequence)))
                removed += 1
            except FileNotFoundError:
                pass
    if removed:
        logger.info("file sink: removed %d in-progress file(s) no snapshot covers", removed)
    return removed
