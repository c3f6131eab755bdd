"""Jet 4.3's sort: every processor of ``<name>-prepare`` sorts its share, and one processor of
the cluster, ``<name>``, puts the sorted runs together.

Both are :class:`SortP`: it keeps every item and sorts at ``complete()``. In the one that
merges, the input is the runs of the first stage interleaved chunk by chunk; Python's sort
(Timsort) finds such runs and merges them, so the second sort costs about a merge, not a sort.
The sort is stable: equal keys keep their input order within a processor.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.processors.base import ChunkEmittingProcessor, Supplier


class SortP(ChunkEmittingProcessor):
    """Keeps every item, then emits them sorted by ``key_fn`` (the items themselves when None)."""

    def __init__(self, key_fn: Callable[[Any], Any] | None, reverse: bool) -> None:
        self._key_fn, self._reverse = key_fn, reverse
        self._items: list = []
        self._sorted = False

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._items.extend(inbox.take_chunk())

    def complete(self) -> bool:
        if not self._sorted:
            self._items.sort(key=self._key_fn, reverse=self._reverse)
            self._sorted = True
        return self.emit_list(self._items)


def sort_p(key_fn: Callable[[Any], Any] | None = None, reverse: bool = False) -> Supplier:
    """A processor that emits its whole input sorted (see :class:`SortP`)."""
    if key_fn is not None and not callable(key_fn):
        raise TypeError(f"sort_p: key_fn must be callable or None, got {key_fn!r}")
    return lambda: SortP(key_fn, bool(reverse))
