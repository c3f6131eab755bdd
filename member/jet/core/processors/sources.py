"""Batch sources over blocks of items: the generator-driven base and the items source."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Any, Iterable, Iterator

from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors.base import ChunkEmittingProcessor, Supplier


class BlockSourceP(ChunkEmittingProcessor):
    """A source emitting the lists that :meth:`blocks` yields, one list per call at most.

    Subclasses implement ``blocks()`` as a generator; it is started in ``init`` (so it sees the
    context) and closed with the processor, so a ``with open(...)`` inside it is closed too.
    """

    _blocks: Iterator[list] | None = None
    _block: list | None = None

    def blocks(self) -> Iterator[list]:
        raise NotImplementedError

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

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()


class ItemsSourceP(BlockSourceP):
    """Emits its share of a collection: processor g of N takes items g, g+N, g+2N, ...

    Every processor of the vertex in the cluster gets a disjoint share, so each item is
    emitted exactly once.
    """

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items

    def blocks(self) -> Iterator[list]:
        context = self.context
        start, step = context.global_index, context.total_parallelism
        if isinstance(self._items, Sequence):
            share = iter(self._items[start::step])
        else:
            share = islice(self._items, start, None, step)
        capacity = max(min(self.outbox.capacities, default=2048), 1)
        while block := list(islice(share, capacity)):
            yield block


def items_source_p(items: Iterable[Any]) -> Supplier:
    """A source of the given items, split across all of the vertex's processors."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"items_source_p needs an iterable of items, got {type(items).__name__}")
    if not isinstance(items, Sequence):
        items = list(items)
    return lambda: ItemsSourceP(items)
