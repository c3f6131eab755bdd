"""File sinks: one file (or, rolling, a series of files) per processor in a directory."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from jet.connectors.transactional_files import SEQUENCE_TAG, TXN_TAG, FileNames, commit_file, remove_uncovered
from jet.connectors.transactions import UnboundedTransactions, has_tag
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.snapshot_keys import BroadcastKey
from jet.core.special_items import Watermark
from jet.job_config import ProcessingGuarantee

FLUSH_INTERVAL_MS = 1000
"""How often a file sink flushes what it wrote, so readers see a stream's output as it comes."""


def prepare_directory(directory: str, what: str) -> None:
    """Create ``directory`` if needed; a clear error naming it when it cannot be written."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise OSError(f"{what}: cannot create directory {directory!r}: {error.strerror}") from error
    if not os.access(directory, os.W_OK):
        raise PermissionError(f"{what}: cannot write to directory {directory!r}")


def to_json(item: Any) -> str:
    """One JSON line; tuples become arrays, anything JSON cannot encode its str()."""
    return json.dumps(item, default=str, ensure_ascii=False)


class FileSinkP(Processor):
    """Writes one line per item to ``<directory>/part-<global index>[-<sequence>]<suffix>``.

    On a stream the file is flushed every ``flush_interval_ms`` (and at every watermark), so a
    reader sees the output while the job runs. With ``max_file_bytes`` the sink rolls its files
    as Jet's does: ``part-<index>-<sequence><suffix>``, a new one when the next line would take
    the current one over the limit (a single longer line gets a file of its own).

    Under an exactly-once job the files are transactions (:mod:`jet.connectors.transactional_files`):
    always sequenced, written as ``.<name>.tmp`` and renamed to ``<name>`` when the snapshot
    that covers them completes (or when the processor completes). Under at-least-once the
    sink writes directly, flushes at every snapshot and, restored after a restart, appends to
    its file (or, rolling, continues after its last one) so what it wrote before stays.
    """

    _file = None
    _name = ""
    _written = 0
    _next_flush = 0.0
    _started = False
    _restored = False

    def __init__(self, directory: str, format_fn: Callable[[Any], str], suffix: str,
                 max_file_bytes: int | None = None, flush_interval_ms: int = FLUSH_INTERVAL_MS) -> None:
        self._directory = directory
        self._format = format_fn
        self._suffix = suffix
        self._max_file_bytes = max_file_bytes
        self._flush_interval_s = flush_interval_ms / 1000
        self._sequence = 0
        self._restored_sequence = 0
        self._txns: UnboundedTransactions | None = None

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        prepare_directory(self._directory, "file sink")
        exactly_once = context.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE
        self._names = FileNames(self._directory, self._suffix, exactly_once or self._max_file_bytes is not None)
        if exactly_once:
            self._txns = UnboundedTransactions(TXN_TAG, self._commit_file)
        if not context.snapshots_enabled:
            self._open_next()  # no restore can come: the file exists even if no item does
        # else files open at the first item, once a restore has said where to go on

    def _start(self) -> None:
        """Once, before the first file: continue after a restored run's files, and drop the
        in-progress files of this processor's indices that no snapshot covers."""
        self._started = True
        context = self.context
        if self._restored and self._names.sequenced:
            self._sequence = max(self._restored_sequence, self._names.next_sequence(context.global_index))
        if self._txns is not None:
            remove_uncovered(self._names, context.global_index, context.total_parallelism, context.logger)

    def _commit_file(self, name: str) -> None:
        commit_file(self._names, name, self.context.logger)

    def _open_next(self) -> None:
        if self._file is not None:
            self._finish_file()
        if not self._started:
            self._start()
        index = self.context.global_index
        self._name = self._names.final(index, self._sequence)
        if self._names.sequenced:
            self._sequence += 1
        if self._txns is not None:
            path, mode = self._names.temp_path(self._name), "w"
        else:  # a restored at-least-once sink keeps what it wrote before the restart
            path, mode = self._names.path(self._name), "a" if self._restored else "w"
        self._file = open(path, mode, encoding="utf-8")
        self._written = 0
        self._next_flush = time.monotonic() + self._flush_interval_s

    def _finish_file(self) -> None:
        file, self._file = self._file, None
        file.close()
        if self._txns is not None:
            self._txns.finished(self.context.global_index, self._sequence - 1, self._name)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self._file is None:
            self._open_next()
        chunk = inbox.take_chunk()
        if self._max_file_bytes is None:
            self._file.write("\n".join(map(self._format, chunk)))
            self._file.write("\n")
        else:
            self._write_rolling(list(map(self._format, chunk)))
        self.try_process()

    def _write_rolling(self, lines: list[str]) -> None:
        text = "\n".join(lines) + "\n"
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        if self._written + size <= self._max_file_bytes:
            self._file.write(text)
            self._written += size
            return
        for line in lines:  # the chunk crosses the limit: place it line by line
            line += "\n"
            size = len(line) if line.isascii() else len(line.encode("utf-8"))
            if self._written and self._written + size > self._max_file_bytes:
                self._open_next()
            self._file.write(line)
            self._written += size

    def try_process(self) -> bool:
        if self._file is not None and time.monotonic() >= self._next_flush:
            self._file.flush()
            self._next_flush = time.monotonic() + self._flush_interval_s
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self._file is not None:
            self._file.flush()
        return True

    def complete(self) -> bool:
        if self._txns is not None:  # no snapshot follows: commit what remains
            if not self._started:
                self._start()
            if self._file is not None:
                self._finish_file()
            self._txns.commit_all()
            return True
        if self._file is None:
            self._open_next()  # an empty output still has its file
        self._file.flush()
        return True

    # -- snapshots --------------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        if not self._started:
            self._start()
        if self._file is not None and self._txns is None:
            self._file.flush()  # at-least-once: what the snapshot covers is written
        self.outbox.offer_to_snapshot(BroadcastKey((SEQUENCE_TAG, self.context.global_index)), self._sequence)
        return True

    def snapshot_commit_prepare(self) -> bool:
        if self._txns is None:
            return True
        if self._file is not None and not self._txns.recording:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._finish_file()
        return self._txns.prepare(self.outbox)

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._txns is not None:
            self._txns.finish(success)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context = self.context
        own, total = context.global_index, context.total_parallelism
        while not inbox.is_empty():
            key, value = inbox.peek()
            if has_tag(key, SEQUENCE_TAG):
                if key.key[1] == own:
                    self._restored_sequence = max(self._restored_sequence, value)
            elif has_tag(key, TXN_TAG) and self._txns is not None:
                self._txns.restore(key, value, own, total)
            elif has_tag(key, TXN_TAG):
                context.logger.warning("file sink: the snapshot holds an exactly-once file (%r) but the job "
                                       "is not exactly-once now; it stays uncommitted", value)
            else:
                raise ValueError(f"file sink {context.vertex_name!r}: unexpected snapshot entry {key!r}")
            inbox.remove()
        self._restored = True

    def finish_snapshot_restore(self) -> bool:
        self._restored = True
        if not self._started:
            self._start()
        return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            if self._txns is not None:  # never prepared: no snapshot covers it (Jet's rollback)
                try:
                    os.remove(self._names.temp_path(self._name))
                except FileNotFoundError:
                    pass
