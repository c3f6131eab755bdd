"""File sinks: one file per processor in a directory."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor


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
    """Writes one line per item to ``<directory>/part-<global index>``."""

    def __init__(self, directory: str, format_fn: Callable[[Any], str], suffix: str) -> None:
        self._directory = directory
        self._format = format_fn
        self._suffix = suffix
        self._file = None

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        prepare_directory(self._directory, "file sink")
        path = os.path.join(self._directory, f"part-{context.global_index:05d}{self._suffix}")
        self._file = open(path, "w", encoding="utf-8")

    def process(self, ordinal: int, inbox: Inbox) -> None:
        chunk = inbox.take_chunk()
        self._file.write("\n".join(map(self._format, chunk)))
        self._file.write("\n")

    def complete(self) -> bool:
        self._file.flush()
        return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
