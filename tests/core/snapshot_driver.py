"""Processors of one vertex driven by hand through a snapshot and a restore into another count.

Each :class:`Driven` wraps one processor with a roomy outbox; tests feed it, save its state,
route the saved entries with :func:`jet.core.test_support.restore_routing` and go on with new
processors that restored them, as the engine does when a job restarts on other members.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark
from jet.core.test_support import restore_routing

_MAX_CALLS = 100_000


def context_of(index: int, count: int, vertex: str = "vertex") -> Context:
    """Processor ``index`` of ``count`` on one member."""
    return Context(vertex_name=vertex, local_index=index, local_parallelism=count)


class Driven:
    """One processor; ``output`` collects what it emitted (watermarks included)."""

    def __init__(self, supplier: Callable[[], Processor], context: Context, capacity: int = 1 << 20) -> None:
        self.processor = supplier()
        self.outbox = Outbox(1, capacity)
        self.processor.init(self.outbox, context)
        self.output: list = []

    def _drain(self) -> None:
        self.output.extend(self.outbox.buckets[0])
        self.outbox.buckets[0] = []
        if self.outbox.pending_special is not None:
            self.output.append(self.outbox.pending_special)
            self.outbox.special_taken()

    def _until(self, step: Callable[[], Any]) -> None:
        for _ in range(_MAX_CALLS):
            done = step()
            self._drain()
            if done:
                return
        raise AssertionError("the processor never finished the call")

    def process(self, items: list, ordinal: int = 0) -> "Driven":
        inbox = Inbox()
        inbox.add_chunk(list(items))
        self._until(lambda: self.processor.process(ordinal, inbox) or inbox.is_empty())
        return self

    def watermark(self, timestamp: int) -> "Driven":
        self._until(lambda: self.processor.try_process_watermark(Watermark(timestamp)))
        return self

    def complete(self, calls: int | None = None) -> "Driven":
        """Call ``complete()`` until True, or ``calls`` times at most."""
        for _ in range(_MAX_CALLS if calls is None else calls):
            done = self.processor.complete()
            self._drain()
            if done:
                break
        return self

    def save(self) -> list[tuple[Any, Any]]:
        """The entries of a snapshot taken now, through pickle as the store keeps them."""
        self._until(self.processor.save_to_snapshot)
        entries, self.outbox.snapshot_entries[:] = list(self.outbox.snapshot_entries), []
        return pickle.loads(pickle.dumps(entries))

    @classmethod
    def restored(cls, supplier: Callable[[], Processor], context: Context,
                 entries: list[tuple[Any, Any]]) -> "Driven":
        driven = cls(supplier, context)
        if entries:
            inbox = Inbox()
            inbox.add_chunk(list(entries))
            driven._until(lambda: driven.processor.restore_from_snapshot(inbox) or inbox.is_empty())
        driven._until(driven.processor.finish_snapshot_restore)
        return driven


def restore_all(supplier: Callable[[], Processor], saved: list[list[tuple[Any, Any]]], count: int,
                vertex: str = "vertex") -> list[Driven]:
    """``count`` new processors restoring what the processors that saved ``saved`` had."""
    return [Driven.restored(supplier, context_of(i, count, vertex), entries)
            for i, entries in enumerate(restore_routing(saved, count))]
