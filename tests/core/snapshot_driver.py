"""Processors of one vertex driven by hand through a snapshot and a restore into another count.

Each :class:`Driven` wraps one processor with a roomy outbox; tests feed it, save its state,
route the saved entries with :func:`jet.core.test_support.restore_routing` and go on with new
processors that restored them, as the engine does when a job restarts on other members.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.processor import Context, Processor
from jet.core.snapshot_keys import BroadcastKey
from jet.core.state_pickle import dumps_entries, load_entries
from jet.core.test_support import restore_routing

from tests.core.stream_driver import StreamDriver

_MAX_CALLS = 100_000


def context_of(index: int, count: int, vertex: str = "vertex") -> Context:
    """Processor ``index`` of ``count`` on one member."""
    return Context(vertex_name=vertex, local_index=index, local_parallelism=count)


class Driven(StreamDriver):
    """One processor; ``output`` collects what it emitted (watermarks included)."""

    max_calls = _MAX_CALLS

    def __init__(self, supplier: Callable[[], Processor], context: Context, capacity: int = 1 << 20) -> None:
        super().__init__(supplier, capacity, context)

    def process(self, items: list, ordinal: int = 0) -> "Driven":
        inbox = Inbox()
        inbox.add_chunk(list(items))
        self._until_true(lambda: self.processor.process(ordinal, inbox) or inbox.is_empty())
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
        """The entries of a snapshot taken now, pickled and loaded as the store keeps them (keyed
        and broadcast entries apart, as the engine's partition groups split them); taken from the
        bounded snapshot buffer after every call, as the engine does (``save_calls``: how many
        calls the save took)."""
        entries: list = []

        def step() -> bool:
            done = self.processor.save_to_snapshot()
            entries.extend(self.outbox.snapshot_entries)
            self.outbox.snapshot_entries = []
            self.save_calls += 1
            return done

        self.save_calls = 0
        self._until_true(step)
        broadcast = [entry for entry in entries if type(entry[0]) is BroadcastKey]
        keyed = [entry for entry in entries if type(entry[0]) is not BroadcastKey]
        return [loaded for part in (keyed, broadcast) if part
                for loaded in load_entries(io.BytesIO(dumps_entries("vertex", part)))[1]]

    @classmethod
    def restored(cls, supplier: Callable[[], Processor], context: Context,
                 entries: list[tuple[Any, Any]]) -> "Driven":
        driven = cls(supplier, context)
        if entries:
            inbox = Inbox()
            inbox.add_chunk(list(entries))
            driven._until_true(lambda: driven.processor.restore_from_snapshot(inbox) or inbox.is_empty())
        driven._until_true(driven.processor.finish_snapshot_restore)
        return driven


def restore_all(supplier: Callable[[], Processor], saved: list[list[tuple[Any, Any]]], count: int,
                vertex: str = "vertex") -> list[Driven]:
    """``count`` new processors restoring what the processors that saved ``saved`` had."""
    return [Driven.restored(supplier, context_of(i, count, vertex), entries)
            for i, entries in enumerate(restore_routing(saved, count))]
