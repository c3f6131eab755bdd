"""A job whose state moves between member counts, for the auto-scaling tests on real members
(members import this module by name when they unpickle the job).

The source reads ``SPLITS`` replayable splits (offsets ``0..per_split-1``; split s belongs to the
processor whose global index is ``s % total_parallelism``, so the splits are dealt again on
another member count) and keeps each split's next offset under a broadcast key. The ledger,
partitioned by split across members, keeps the offsets each split delivered, under the split
itself, and emits them when the job completes. Exactly once means each split's list is exactly
``0..per_split-1`` in order, whatever restarts came between.
"""

from __future__ import annotations

import os
import time

from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge, Processor
from jet.core.snapshot_keys import broadcast_key

SPLITS = 12


def split_of(item: tuple[int, int]) -> int:
    return item[0]


class SplitSourceP(Processor):
    """Emits ``(split, offset)`` for its splits, ``per_call`` per split at most every ``pause_s``;
    offsets from ``hold`` on only once the file ``release_path`` exists."""

    def __init__(self, per_split: int, hold: int, release_path: str, per_call: int, pause_s: float) -> None:
        self._per_split, self._hold, self._release_path = per_split, hold, release_path
        self._per_call, self._pause_s = per_call, pause_s
        self._due = 0.0
        self._limit = hold

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._next = {s: 0 for s in range(SPLITS) if s % context.total_parallelism == context.global_index}

    def complete(self) -> bool:
        now = time.monotonic()
        if now < self._due:
            return False
        self._due = now + self._pause_s
        if self._limit < self._per_split and os.path.exists(self._release_path):
            self._limit = self._per_split
        for split, offset in self._next.items():
            end = min(offset + self._per_call, self._limit)
            if end > offset and self.outbox.offer_chunk([(split, o) for o in range(offset, end)]):
                self._next[split] = end
        return all(offset >= self._per_split for offset in self._next.values())

    def save_to_snapshot(self) -> bool:
        for split, offset in self._next.items():
            self.outbox.offer_to_snapshot(broadcast_key(("split", split)), offset)
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while not inbox.is_empty():
            key, offset = inbox.peek()
            split = key.key[1]
            if split in self._next:
                self._next[split] = offset
            inbox.remove()


class LedgerP(Processor):
    """Per split, the offsets received in order; its state under the split (the edge's key)."""

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._offsets: dict[int, list[int]] = {}

    def process(self, ordinal, inbox) -> None:
        offsets = self._offsets
        for split, offset in inbox.take_chunk():
            offsets.setdefault(split, []).append(offset)

    def complete(self) -> bool:
        return self.outbox.offer_chunk(sorted(self._offsets.items())) if self._offsets else True

    def save_to_snapshot(self) -> bool:
        for split, offsets in self._offsets.items():
            self.outbox.offer_to_snapshot(split, list(offsets))
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while not inbox.is_empty():
            split, offsets = inbox.peek()
            self._offsets[split] = list(offsets)
            inbox.remove()


def split_ledger_dag(per_split: int, hold: int, release_path: str, per_call: int = 4,
                     pause_s: float = 0.02) -> DAG:
    """source (one per member) -> ledger (partitioned by split across members) -> result ``default``."""
    dag = DAG()
    source = dag.new_vertex("splits", lambda: SplitSourceP(per_split, hold, release_path, per_call, pause_s), 1)
    ledger = dag.new_vertex("ledger", LedgerP, 2)
    sink = dag.new_vertex("collect", lambda: ListResultSinkP("default"), 1)
    dag.edge(Edge.between(source, ledger).distributed().partitioned(split_of))
    dag.edge(Edge.between(ledger, sink))
    return dag
