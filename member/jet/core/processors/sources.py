"""Batch sources over blocks of items: the generator-driven base and the items source."""

from __future__ import annotations

from collections.abc import Sequence
from math import gcd
from typing import Any, Iterable, Iterator

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors.base import ChunkEmittingProcessor, Supplier
from jet.core.processors.snapshot_state import own_key, tagged, unexpected_entry


class BlockSourceP(ChunkEmittingProcessor):
    """A source emitting the lists that :meth:`blocks` yields, one list per call at most.

    Subclasses implement ``blocks()`` as a generator; it is started in ``init`` (so it sees the
    context) and closed with the processor, so a ``with open(...)`` inside it is closed too. It
    runs up to its first ``yield`` only at the first ``complete()``, after a restore.

    Snapshots: a subclass that can resume implements :meth:`unread` (what its blocks have not
    reached yet, picklable) and :meth:`restore_unread`; the base saves ``unread()`` under
    ``BroadcastKey(("position", global_index))`` once the current block is all emitted, and at
    restore hands every processor's saved value to ``restore_unread``, which keeps this
    processor's share. A source restored from a snapshot none of its processors saved into (they
    had all finished) starts from the beginning, as a new source does.
    """

    _blocks: Iterator[list] | None = None
    _block: list | None = None
    _restored: list | None = None

    def blocks(self) -> Iterator[list]:
        raise NotImplementedError

    def unread(self) -> Any:
        """What this processor has not read yet, for the snapshot; None: cannot resume."""
        return None

    def restore_unread(self, saved: list[Any]) -> None:
        """Take this processor's share of what the processors that saved had not read."""
        raise NotImplementedError(f"{type(self).__name__} cannot resume from a snapshot")

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._blocks = self.blocks()

    def complete(self) -> bool:
        if self._block is None:
            self._block = next(self._blocks, None)
            if self._block is None:
                return True
        if self.emit_list(self._block):
            self._block = None
        return False

    def save_to_snapshot(self) -> bool:
        if not self.finish_emitting():
            return False
        unread = self.unread()
        if unread is not None:
            self.outbox.offer_to_snapshot(own_key("position", self.context), unread)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        restored = self._restored = self._restored or []
        for key, value in inbox.take_chunk():
            if tagged(key, "position") is None:
                raise unexpected_entry(self.context.vertex_name, self, key)
            restored.append(value)

    def finish_snapshot_restore(self) -> bool:
        if self._restored is not None:
            self.restore_unread(self._restored)
            self._restored = None
        return True

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()


def share_of(progression: range, index: int, count: int) -> range:
    """The elements ``e`` of ``progression`` (step >= 1) with ``e % count == index``, as a range."""
    start, step = progression.start, progression.step
    period = count // gcd(step, count)
    for k in range(min(period, len(progression))):
        if (start + k * step) % count == index:
            return range(start + k * step, progression.stop, step * period)
    return range(0)


class ItemsSourceP(BlockSourceP):
    """Emits its share of a collection: processor g of N takes items g, g+N, g+2N, ...

    Every processor of the vertex in the cluster gets a disjoint share, so each item is
    emitted exactly once. Its position is the ranges of indices it has not emitted; at restore
    a processor takes, of every range saved, the indices ``i`` with ``i % N == g``, so a
    different parallelism still emits every item exactly once.
    """

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items if isinstance(items, Sequence) else list(items)
        self._ranges: list[range] | None = None

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._ranges = [range(context.global_index, len(self._items), context.total_parallelism)]

    def blocks(self) -> Iterator[list]:
        items, ranges = self._items, self._ranges
        capacity = max(min(self.outbox.capacities, default=2048), 1)
        while ranges:
            block, ranges[0] = ranges[0][:capacity], ranges[0][capacity:]
            if not ranges[0]:
                del ranges[0]
            if block:
                yield list(items[block.start:block.stop:block.step])

    def unread(self) -> list[range]:
        return list(self._ranges)

    def restore_unread(self, saved: list[list[range]]) -> None:
        context = self.context
        shares = (share_of(r, context.global_index, context.total_parallelism) for ranges in saved
                  for r in ranges)
        self._ranges[:] = sorted((r for r in shares if r), key=lambda r: r.start)


def items_source_p(items: Iterable[Any]) -> Supplier:
    """A source of the given items, split across all of the vertex's processors."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"items_source_p needs an iterable of items, got {type(items).__name__}")
    if not isinstance(items, Sequence):
        items = list(items)
    return lambda: ItemsSourceP(items)
