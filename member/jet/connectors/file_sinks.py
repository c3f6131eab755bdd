"""File sinks: one file (or, rolling, a series of files) per processor in a directory."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark

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
    """Writes one line per item to ``<directory>/part-<global index><suffix>``.

    On a stream the file is flushed every ``flush_interval_ms`` (and at every watermark), so a
    reader sees the output while the job runs. With ``max_file_bytes`` the sink rolls its files
    as Jet's does: ``part-<index>-<sequence><suffix>``, a new one when the next line would take
    the current one over the limit (a single longer line gets a file of its own).
    """

    _file = None
    _written = 0
    _sequence = 0
    _next_flush = 0.0

    def __init__(self, directory: str, format_fn: Callable[[Any], str], suffix: str,
                 max_file_bytes: int | None = None, flush_interval_ms: int = FLUSH_INTERVAL_MS) -> None:
        self._directory = directory
        self._format = format_fn
        self._suffix = suffix
        self._max_file_bytes = max_file_bytes
        self._flush_interval_s = flush_interval_ms / 1000

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        prepare_directory(self._directory, "file sink")
        self._open_next()

    def _open_next(self) -> None:
        if self._file is not None:
            self._file.close()
        name = f"part-{self.context.global_index:05d}"
        if self._max_file_bytes is not None:
            name += f"-{self._sequence:05d}"
            self._sequence += 1
        self._file = open(os.path.join(self._directory, name + self._suffix), "w", encoding="utf-8")
        self._written = 0
        self._next_flush = time.monotonic() + self._flush_interval_s

    def process(self, ordinal: int, inbox: Inbox) -> None:
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
        if time.monotonic() >= self._next_flush:
            self._file.flush()
            self._next_flush = time.monotonic() + self._flush_interval_s
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self._file.flush()
        return True

    def complete(self) -> bool:
        self._file.flush()
        return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
