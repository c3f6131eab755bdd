"""Text, CSV and JSON-lines file sources, split across every source processor of the cluster.

Line files are split by bytes: the files (sorted by name) are laid end to end and processor g
of N reads bytes [total*g/N, total*(g+1)/N). A line belongs to the range its first byte is
in, so a processor skips the partial line it starts in and finishes the line it ends in; each
line is read exactly once in the cluster. CSV files are split by whole files, because a quoted
field may contain a newline and a byte range cannot tell.
"""

from __future__ import annotations

import csv
import glob
import json
import os
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

    def blocks(self) -> Iterator[list]:
        files = matching_files(self._pattern, self._what)
        sizes = [os.path.getsize(path) for path in files]
        context = self.context
        for position, start, end in byte_ranges(sizes, context.global_index, context.total_parallelism):
            for lines in read_lines(files[position], start, end, self._encoding):
                yield self._parse_chunk(lines) if self._parse_chunk else lines


def read_lines(path: str, start: int, end: int, encoding: str = "utf-8") -> Iterator[list[str]]:
    """Blocks of the lines whose first byte is in [start, end), without line terminators."""
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
            yield block


def parse_json_lines(lines: list[str]) -> list[Any]:
    """Parse a block of JSON lines with one call (blank lines are skipped)."""
    lines = [line for line in lines if line.strip()]
    return json.loads("[" + ",".join(lines) + "]") if lines else []


class CsvSourceP(BlockSourceP):
    """Emits each row of its share of the CSV files as a dict keyed by the header row."""

    def __init__(self, pattern: str, encoding: str = "utf-8") -> None:
        self._pattern = pattern
        self._encoding = encoding

    def blocks(self) -> Iterator[list]:
        files = matching_files(self._pattern, "Sources.csv")
        context = self.context
        for path in files[context.global_index::context.total_parallelism]:
            with open(path, newline="", encoding=self._encoding) as handle:
                rows = csv.DictReader(handle)
                while block := list(islice(rows, 1024)):
                    yield block
