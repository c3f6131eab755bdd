"""What the Spark streaming processors share with the network thread (the hub).

:class:`StreamSinkEndpoint` is the buffer of one Spark *stream* sink processor. Unlike the
batch sink's, its items have positions (0, 1, ... in the order the processor took them) and
stay until Spark commits them, so a Spark stream reader's offsets are these positions: a
micro-batch reads positions ``[start, end)`` of each processor, a failed read task is simply
read again, and ``commit(end)`` (after the micro-batch is in Spark's sink) discards what is
below ``end``. :class:`MicroBatchCommits` keeps the commits of a stream source's micro-batches.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


class StreamSinkEndpoint:
    """The positioned, bounded buffer of one Spark stream sink processor."""

    def __init__(self, vertex: Any, index: int, capacity_items: int) -> None:
        self.vertex = vertex
        self.index = index
        self.capacity_items = capacity_items
        self.chunks: deque[tuple[int, list]] = deque()  # (position of the first item, items)
        self.appended = 0
        self.committed = 0
        self.input_done = False
        self.seen_by_spark = False  # a Spark stream reader has asked for the state
        self.lock = threading.Lock()

    def is_full(self) -> bool:
        return self.appended - self.committed >= self.capacity_items

    def add(self, chunk: list) -> None:
        if chunk:
            with self.lock:
                self.chunks.append((self.appended, chunk))
                self.appended += len(chunk)

    def finish_input(self) -> None:
        with self.lock:
            self.input_done = True

    @property
    def finished(self) -> bool:
        """All input is in, and a Spark reader has committed every item (so even a sink without
        items waits until Spark has seen it: its driver would wait for the vertex otherwise)."""
        return self.input_done and self.seen_by_spark and self.committed >= self.appended

    def state(self) -> list:
        """``[appended, committed, input_done, capacity]`` (what the Spark driver plans from)."""
        with self.lock:
            self.seen_by_spark = True
            return [self.appended, self.committed, self.input_done, self.capacity_items]

    def fetch(self, start: int, end: int, max_items: int) -> list:
        """Items at positions ``[start, min(end, start + max_items))``; ValueError when some of
        them were committed (discarded) already or were never appended."""
        stop = min(end, start + max_items)
        with self.lock:
            if start < self.committed or stop > self.appended:
                raise ValueError(f"positions [{start}, {stop}) of Spark stream sink #{self.index} are not "
                                 f"buffered (it holds [{self.committed}, {self.appended}))")
            items: list = []
            for first, chunk in self.chunks:
                if first + len(chunk) <= start:
                    continue
                if first >= stop:
                    break
                items.extend(chunk[max(0, start - first):stop - first])
            return items

    def trim(self, end: int) -> None:
        """Spark committed every position below ``end``: forget those items."""
        with self.lock:
            end = min(end, self.appended)
            if end <= self.committed:
                return
            while self.chunks and self.chunks[0][0] + len(self.chunks[0][1]) <= end:
                self.chunks.popleft()
            self.committed = end

    def sample(self, count: int) -> tuple[bool, list]:
        with self.lock:
            items: list = []
            for _, chunk in self.chunks:
                items.extend(chunk[:count - len(items)])
                if len(items) >= count:
                    break
            return bool(items) or self.input_done, items


class MicroBatchCommits:
    """The committed micro-batches of one Spark stream source vertex on one member.

    ``counts[(query, batch)]`` is {Spark partition: row count} as the Spark driver committed
    it; a batch is dropped once every local processor has settled it (emitted all its rows)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], dict[int, int]] = {}
        self._settled_by: dict[tuple[str, int], set[int]] = {}
        self.lock = threading.Lock()

    def add(self, query: str, batch: int, counts: dict[int, int]) -> None:
        with self.lock:
            self.counts[(query, batch)] = counts

    def pending(self) -> list[tuple[tuple[str, int], dict[int, int]]]:
        with self.lock:
            return sorted(self.counts.items(), key=lambda entry: entry[0][1])

    def settled(self, key: tuple[str, int], processor: int, local_processors: int) -> None:
        """Processor ``processor`` has emitted every row of the batch it owns."""
        with self.lock:
            settled = self._settled_by.setdefault(key, set())
            settled.add(processor)
            if len(settled) >= local_processors:
                self.counts.pop(key, None)
                del self._settled_by[key]
