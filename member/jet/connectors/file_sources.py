"""Text, CSV and JSON-lines file sources, split across every source processor of the cluster.

Line files are split by bytes: the files (sorted by name) are laid end to end and processor g
of N reads bytes [total*g/N, total*(g+1)/N). A line belongs to the range its first byte is
in, so a processor skips the partial line it starts in and finishes the line it ends in; each
line is read exactly once in the cluster. CSV files are split by whole files, because a quoted
field may contain a newline and a byte range cannot tell.

Snapshots (:class:`~jet.core.processors.BlockSourceP`): a line source saves what it has not
read as ``(path, start, end)`` byte segments (the first one starting at the next unread line);
at restore every processor intersects all saved segments with its own byte ranges of the new
parallelism, so each line is still read exactly once. A CSV source saves ``(path, rows read)``
per file it has not finished; at restore processor g of N takes the files at positions g, g+N,
... of the sorted matching files, as at the start.
"""

from __future__ import annotations

import csv
import glob
import json
import os
from collections import deque
from itertools import islice
from typing import Any, Callable, Iterator

from jet.core.processors import BlockSourceP

READ_HINT_BYTES = 64 * 1024


def matching_files(pattern: str, what: str) -> list[str]:
    """The regular files matching ``pattern``, sorted; a clear error when there is none."""
    files = sorted(path for path in glob.glob(pattern, recursive=True) if os.path.isfile(path))
    if not files:
        raise FileNotFoundError(f"{what}: no file matches {pattern!r}")
    for path in files:
        if not os.access(path, os.R_OK):
            raise PermissionError(f"{what}: cannot read {path!r}")
    return files


def byte_ranges(sizes: list[int], index: int, count: int) -> list[tuple[int, int, int]]:
    """(file position, start, end) segments of processor ``index`` of ``count``."""
    total = sum(sizes)
    low, high = total * index // count, total * (index + 1) // count
    segments, offset = [], 0
    for position, size in enumerate(sizes):
        start, end = max(low, offset), min(high, offset + size)
        if start < end:
            segments.append((position, start - offset, end - offset))
        offset += size
    return segments


class LinesSourceP(BlockSourceP):
    """Emits the lines (or ``parse_chunk`` of them) of its byte ranges of the matching files."""

    def __init__(self, pattern: str, what: str, parse_chunk: Callable[[list[str]], list] | None,
                 encoding: str = "utf-8") -> None:
        self._pattern, self._what = pattern, what
        self._parse_chunk = parse_chunk
        self._encoding = encoding
        self._segments: list[tuple[str, int, int]] | None = None

    def _own_segments(self) -> list[tuple[str, int, int]]:
        """(path, start, end) of this processor's byte ranges of the files matching now."""
        files = matching_files(self._pattern, self._what)
        sizes = [os.path.getsize(path) for path in files]
        context = self.context
        return [(files[position], start, end) for position, start, end
                in byte_ranges(sizes, context.global_index, context.total_parallelism)]

    def _unread_segments(self) -> list[tuple[str, int, int]]:
        if self._segments is None:
            self._segments = self._own_segments()
        return self._segments

    def blocks(self) -> Iterator[list]:
        segments, parse_chunk = self._unread_segments(), self._parse_chunk
        while segments:
            path, start, end = segments[0]
            for reached, lines in read_lines(path, start, end, self._encoding):
                segments[0] = (path, reached, end)
                yield parse_chunk(lines) if parse_chunk else lines
            del segments[0]

    def unread(self) -> list[tuple[str, int, int]]:
        return [segment for segment in self._unread_segments() if segment[1] < segment[2]]

    def restore_unread(self, saved: list[list[tuple[str, int, int]]]) -> None:
        own = self._own_segments()
        order = {path: position for position, (path, _start, _end) in enumerate(own)}
        mine = []
        for segments in saved:
            for path, start, end in segments:
                for own_path, own_start, own_end in own:
                    low, high = max(start, own_start), min(end, own_end)
                    if own_path == path and low < high:
                        mine.append((path, low, high))
        self._segments = sorted(mine, key=lambda segment: (order[segment[0]], segment[1]))


def read_lines(path: str, start: int, end: int, encoding: str = "utf-8") -> Iterator[tuple[int, list[str]]]:
    """Blocks of the lines whose first byte is in [start, end), without line terminators, each
    with the offset after it (where the next unread line starts, or a point at or past ``end``)."""
    with open(path, "rb") as file:
        if start > 0:
            file.seek(start - 1)
            if file.read(1) != b"\n":
                file.readline()
        position = file.tell()
        while position < end:
            lines = file.readlines(READ_HINT_BYTES)
            if not lines:
                return
            length = sum(map(len, lines))
            if position + length > end:
                kept, reached = [], position
                for line in lines:
                    if reached >= end:
                        break
                    kept.append(line)
                    reached += len(line)
                lines = kept
            position += length
            text = b"".join(lines).decode(encoding)
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            block = text.split("\n")
            if block[-1] == "":
                block.pop()
            yield position, block


def parse_json_lines(lines: list[str]) -> list[Any]:
    """Parse a block of JSON lines with one call (blank lines are skipped)."""
    lines = [line for line in lines if line.strip()]
    return json.loads("[" + ",".join(lines) + "]") if lines else []


class CsvSourceP(BlockSourceP):
    """Emits each row of its share of the CSV files as a dict keyed by the header row."""

    def __init__(self, pattern: str, encoding: str = "utf-8") -> None:
        self._pattern = pattern
        self._encoding = encoding
        self._files: list[tuple[str, int]] | None = None

    def _own_files(self) -> list[str]:
        files = matching_files(self._pattern, "Sources.csv")
        context = self.context
        return files[context.global_index::context.total_parallelism]

    def _unread_files(self) -> list[tuple[str, int]]:
        """(path, rows already read) of the files this processor has not finished."""
        if self._files is None:
            self._files = [(path, 0) for path in self._own_files()]
        return self._files

    def blocks(self) -> Iterator[list]:
        files = self._unread_files()
        while files:
            path, done = files[0]
            with open(path, newline="", encoding=self._encoding) as handle:
                rows = csv.DictReader(handle)
                deque(islice(rows, done), maxlen=0)  # skip the rows emitted before a restore
                while block := list(islice(rows, 1024)):
                    done += len(block)
                    files[0] = (path, done)
                    yield block
            del files[0]

    def unread(self) -> list[tuple[str, int]]:
        return list(self._unread_files())

    def restore_unread(self, saved: list[list[tuple[str, int]]]) -> None:
        order = {path: position for position, path in enumerate(self._own_files())}
        mine = [(path, done) for files in saved for path, done in files if path in order]
        self._files = sorted(mine, key=lambda entry: order[entry[0]])
