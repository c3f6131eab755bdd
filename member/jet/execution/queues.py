"""Bounded single-producer/single-consumer queues of item chunks and special items.

A queue joins one upstream processor to one downstream processor. It holds chunks (lists of
items) and special items (DONE, watermarks, and later snapshot barriers) in order, and
refuses data beyond ``capacity`` items, which is what gives local edges their backpressure.
Only the producer writes ``_produced`` and only the consumer writes ``_consumed``; with one
writer per counter no lock is needed.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from jet.core.edge import DEFAULT_QUEUE_SIZE
from jet.core.special_items import DONE_ITEM, SpecialItem
from jet.execution.backoff import wake_parked_workers

UNBOUNDED = sys.maxsize


__all__ = ["DONE_ITEM", "SpecialItem", "SpscQueue", "UNBOUNDED"]


class SpscQueue:
    """A bounded queue of chunks between one producer and one consumer."""

    __slots__ = ("capacity", "_entries", "_produced", "_consumed", "name")

    def __init__(self, capacity: int = DEFAULT_QUEUE_SIZE, name: str = "") -> None:
        if capacity < 1:
            raise ValueError(f"queue capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._entries: deque = deque()
        self._produced = 0
        self._consumed = 0
        self.name = name

    # -- producer side -----------------------------------------------------------------
    def offer_chunk(self, chunk: list) -> int:
        """Append as much of ``chunk`` as fits; return how many items were taken.

        The queue keeps the list itself when it takes all of it: the producer hands it over.
        """
        free = self.capacity - (self._produced - self._consumed)
        if free <= 0:
            return 0
        n = len(chunk)
        if n > free:
            self._entries.append(chunk[:free])
            n = free
        else:
            self._entries.append(chunk)
        self._produced += n
        return n

    def offer_special(self, item: SpecialItem) -> bool:
        """Append a special item; it takes one slot, so a full queue refuses it.

        It wakes the parked threads at once, where data waits for the producer's throttled
        wake-up (:class:`~jet.execution.backoff.ProgressWaker`, up to 1 ms): someone waits for
        each special item (a watermark closes windows, a barrier a snapshot, DONE a job)."""
        if self._produced - self._consumed >= self.capacity:
            return False
        self._entries.append(item)
        self._produced += 1
        wake_parked_workers()
        return True

    # -- consumer side -----------------------------------------------------------------
    def poll(self) -> Any:
        """Remove and return the next chunk or special item; None when empty."""
        entries = self._entries
        if not entries:  # the only consumer: what is there now stays until it takes it
            return None
        entry = entries.popleft()
        self._consumed += len(entry) if type(entry) is list else 1
        return entry

    # -- either side ----------------------------------------------------------------------
    def size(self) -> int:
        """Items (and special items) in the queue now."""
        return self._produced - self._consumed

    def is_empty(self) -> bool:
        return self._produced == self._consumed

    def __repr__(self) -> str:
        cap = "unbounded" if self.capacity == UNBOUNDED else self.capacity
        return f"SpscQueue({self.name!r}, {self.size()}/{cap})"
