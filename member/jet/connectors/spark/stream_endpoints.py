"""What the Spark streaming processors share with the network thread (the hub).

:class:`StreamSinkEndpoint` is the buffer of one Spark *stream* sink processor. Unlike the
batch sink's, its items have positions (0, 1, ... in the order the processor took them) and
stay until Spark commits them, so a Spark stream reader's offsets are these positions: a
micro-batch reads positions ``[start, end)`` of each processor, a failed read task is simply
read again, and ``commit(end)`` (after the micro-batch is in Spark's sink) discards what is
below ``end``. :class:`MicroBatchCommits` keeps the commits of a stream source's micro-batches.

Under a job that takes snapshots both wait for the snapshots (Jet's two phases): a sink shows
Spark only the items a completed snapshot holds (``visible_end``), so what Spark has read is
never emitted again after a restore; a source's member acknowledges a micro-batch's commit
only once every local processor has it in a completed snapshot, so Spark replays a batch the
job could still lose.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Iterable


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
        self.visible_end: int | None = None
        """Positions below it are in a completed snapshot; None: every appended item is visible."""
        self.lock = threading.Lock()

    @property
    def visible(self) -> int:
        """The end of what Spark may read."""
        return self.appended if self.visible_end is None else self.visible_end

    def is_full(self) -> bool:
        """Whether Spark lags a whole buffer behind on what it may read. Items that wait for a
        snapshot do not count: refusing them would hold the snapshot's barrier back for good."""
        return self.visible - self.committed >= self.capacity_items

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
        """``[visible, committed, input_done, capacity]`` (what the Spark driver plans from);
        the input counts as done once all of it is visible."""
        with self.lock:
            self.seen_by_spark = True
            visible = self.visible
            return [visible, self.committed, self.input_done and visible == self.appended, self.capacity_items]

    def make_visible(self, end: int | None) -> None:
        """Spark may read below ``end`` (None: everything, now and from now on)."""
        with self.lock:
            self.visible_end = None if end is None else max(end, self.visible_end or 0)

    def buffered(self) -> tuple[int, int, list]:
        """``(committed, appended, items)``: what a snapshot saves of this buffer."""
        with self.lock:
            items: list = []
            for first, chunk in self.chunks:  # the first chunk may start below ``committed``
                items.extend(chunk[self.committed - first:] if first < self.committed else chunk)
            return self.committed, self.appended, items

    def restore(self, committed: int, items: list, visible_end: int | None) -> None:
        """Hold ``items`` at positions from ``committed`` on (a restored buffer)."""
        with self.lock:
            self.chunks.clear()
            if items:
                self.chunks.append((committed, list(items)))
            self.committed, self.appended = committed, committed + len(items)
            self.visible_end = visible_end

    def fetch(self, start: int, end: int, max_items: int) -> list:
        """Items at positions ``[start, min(end, start + max_items))``; ValueError when some of
        them were committed (discarded) already or were never appended."""
        stop = min(end, start + max_items)
        with self.lock:
            if start < self.committed or stop > self.visible:
                raise ValueError(f"positions [{start}, {stop}) of Spark stream sink #{self.index} are not "
                                 f"buffered (it holds [{self.committed}, {self.visible}) for Spark)")
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
        self.requires_snapshot = False
        """The job takes snapshots: a commit is acknowledged once the batch is in one."""
        self._durable: dict[int, dict[str, int]] = {}  # processor -> query -> batch in a completed snapshot
        self._waiting: list[tuple[str, int, Callable[[], None], Callable[[str], None]]] = []

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

    def acknowledge_when_durable(self, query: str, batch: int, processors: Iterable[int],
                                 acknowledge: Callable[[], None], refuse: Callable[[str], None]) -> None:
        """Call ``acknowledge`` once every processor in ``processors`` has settled ``batch`` of
        ``query`` in a completed snapshot (at once when the job takes none); ``refuse`` with the
        reason if the processors go away first (the job restarted or failed)."""
        if not self.requires_snapshot:
            acknowledge()
            return
        with self.lock:
            if not self._is_durable(query, batch, processors):
                self._waiting.append((query, batch, acknowledge, refuse))
                return
        acknowledge()

    def _is_durable(self, query: str, batch: int, processors: Iterable[int]) -> bool:
        return all(self._durable.get(index, {}).get(query, -1) >= batch for index in processors)

    def durable(self, processor: int, settled_through: dict[str, int], processors: Iterable[int]) -> None:
        """Processor ``processor``'s snapshot that holds ``settled_through`` has completed."""
        processors = list(processors)
        with self.lock:
            mine = self._durable.setdefault(processor, {})
            for query, batch in settled_through.items():
                mine[query] = max(batch, mine.get(query, -1))
            ready = [entry for entry in self._waiting if self._is_durable(entry[0], entry[1], processors)]
            self._waiting = [entry for entry in self._waiting if entry not in ready]
        for _, _, acknowledge, _ in ready:
            acknowledge()

    def abandon(self, reason: str) -> None:
        """The vertex stopped here before the waiting commits were in a snapshot: refuse them."""
        with self.lock:
            waiting, self._waiting = self._waiting, []
        for query, batch, _, refuse in waiting:
            refuse(f"{JOB_RESTARTED}: micro-batch {batch} of Spark query {query} is in no completed "
                   f"snapshot of the job ({reason}); Spark must run it again")


JOB_RESTARTED = "the Jet job stopped before its snapshot held the micro-batch"
"""Starts the reason of a refused commit: the Spark side restarts its query, which replays it."""
