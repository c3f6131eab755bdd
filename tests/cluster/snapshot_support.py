"""Processors with snapshot state for the fault-tolerance tests on real members; members import
this module by name when they unpickle a job, so it must stay importable."""

from __future__ import annotations

import time

from jet.core import DAG, Edge, Processor
from jet.core.snapshot_keys import broadcast_key


class CheckpointedSequenceP(Processor):
    """Emits its share of ``0..total-1`` (the numbers equal to its global index modulo the
    vertex's parallelism), ``per_call`` numbers at most every ``pause_s``; its next number is its
    snapshot state, under its global index."""

    def __init__(self, total: int, per_call: int, pause_s: float) -> None:
        self._total, self._per_call, self._pause_s = total, per_call, pause_s
        self._due = 0.0

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._next = context.global_index
        self._step = context.total_parallelism

    def complete(self) -> bool:
        now = time.monotonic()
        if self._next < self._total and now >= self._due:
            for _ in range(self._per_call):
                if self._next >= self._total or not self.outbox.offer(self._next):
                    break
                self._next += self._step
            self._due = now + self._pause_s
        return self._next >= self._total

    def save_to_snapshot(self) -> bool:
        self.outbox.offer_to_snapshot(broadcast_key(self.context.global_index), self._next)
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while not inbox.is_empty():
            key, value = inbox.peek()
            if key.key == self.context.global_index:
                self._next = value
            inbox.remove()


class SnapshottedListSinkP(Processor):
    """Collects its items into the job's named result; the collected items are its snapshot state."""

    def __init__(self, name: str) -> None:
        self._name = name

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._items = context.results.setdefault(self._name, [])

    def process(self, ordinal, inbox) -> None:
        self._items.extend(inbox.take_chunk())

    def save_to_snapshot(self) -> bool:
        self.outbox.offer_to_snapshot(broadcast_key(("sink", self.context.global_index)), list(self._items))
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while not inbox.is_empty():
            key, value = inbox.peek()
            if key.key == ("sink", self.context.global_index):
                self._items.extend(value)
            inbox.remove()


def counting_dag(total: int, per_call: int = 20, pause_s: float = 0.02) -> DAG:
    """Each member's source feeds that member's sink; the job's result ``default`` is ``0..total-1``."""
    dag = DAG()
    source = dag.new_vertex("numbers", lambda: CheckpointedSequenceP(total, per_call, pause_s), 1)
    sink = dag.new_vertex("collect", lambda: SnapshottedListSinkP("default"), 1)
    dag.edge(Edge.between(source, sink))
    return dag
