"""Outbound collectors: the routing policies that spread an outbox bucket over queues.

A collector owns the leaves of one outbound edge of one processor (its queue in each
downstream conveyor it may feed). It takes a whole chunk at a time and keeps what the leaves
did not accept as *pending*; while anything is pending it takes no new chunk, so each
collector buffers at most one chunk beyond its queues. Special items (DONE) always go to
every leaf, and a leaf that accepted one is never offered it again.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from jet.core.functions import whole_item
from jet.core.partitioner import PARTITION_COUNT, HashPartitioner, Partitioner, key_to_partition_fn
from jet.execution.queues import SpecialItem


class Leaf(Protocol):
    """Where a collector puts items: a local queue, or the queue of a network sender."""

    def offer_chunk(self, chunk: list) -> int: ...

    def offer_special(self, item: SpecialItem) -> bool: ...


class OutboundCollector:
    """Base: per-leaf pending pieces, special-item broadcast without duplicates."""

    def __init__(self, leaves: Sequence[Leaf]) -> None:
        if not leaves:
            raise ValueError("an outbound collector needs at least one leaf")
        self.leaves = list(leaves)
        self._pending: list[list | None] = [None] * len(self.leaves)
        self.has_pending = False
        self._special_accepted: set[int] = set()

    def offer_chunk(self, chunk: list) -> bool:
        """Take ``chunk`` (handing it over) unless an earlier one is still pending."""
        if self.has_pending and not self.flush():
            return False
        self._distribute(chunk)
        self.has_pending = True
        self.flush()
        return True

    def _distribute(self, chunk: list) -> None:
        raise NotImplementedError

    def flush(self) -> bool:
        """Push pending pieces into their leaves; True when nothing is pending any more."""
        if not self.has_pending:
            return True
        clear = True
        pending, leaves = self._pending, self.leaves
        for index, piece in enumerate(pending):
            if piece is None:
                continue
            taken = leaves[index].offer_chunk(piece)
            if taken == len(piece):
                pending[index] = None
            else:
                if taken:
                    pending[index] = piece[taken:]
                clear = False
        self.has_pending = not clear
        return clear

    def offer_special(self, item: SpecialItem) -> bool:
        """Offer a special item to every leaf (after the pending data); True once all took it."""
        if self.has_pending and not self.flush():
            return False
        accepted = self._special_accepted
        for index, leaf in enumerate(self.leaves):
            if index not in accepted and leaf.offer_special(item):
                accepted.add(index)
        if len(accepted) == len(self.leaves):
            accepted.clear()
            return True
        return False


class RoundRobinCollector(OutboundCollector):
    """Unicast: each chunk goes to the cursor's leaf; a full leaf is skipped, and the chunk
    (or what is left of it) waits only after a full lap found every leaf full."""

    def __init__(self, leaves: Sequence[Leaf]) -> None:
        super().__init__(leaves)
        self._cursor = 0
        self._remainder: list | None = None

    def _distribute(self, chunk: list) -> None:
        self._remainder = chunk

    def flush(self) -> bool:
        chunk = self._remainder
        if chunk is None:
            self.has_pending = False
            return True
        leaves, cursor = self.leaves, self._cursor
        count = len(leaves)
        misses = 0
        while misses < count:
            taken = leaves[cursor].offer_chunk(chunk)
            cursor = cursor + 1 if cursor + 1 < count else 0
            if taken == len(chunk):
                self._cursor, self._remainder, self.has_pending = cursor, None, False
                return True
            if taken:
                chunk = chunk[taken:]
                misses = 0
            else:
                misses += 1
        self._cursor, self._remainder, self.has_pending = cursor, chunk, True
        return False


class BroadcastCollector(OutboundCollector):
    """Broadcast: every leaf gets its own copy of every chunk."""

    def _distribute(self, chunk: list) -> None:
        pending = self._pending
        last = len(pending) - 1
        for index in range(last):
            pending[index] = list(chunk)
        pending[last] = chunk


class PartitionedCollector(OutboundCollector):
    """Partitioned: key -> partition -> leaf through a 271-entry table; no fallback leaf."""

    def __init__(self, leaves: Sequence[Leaf], key_fn: Callable[[Any], Any],
                 partitioner: Partitioner, partition_to_leaf: Sequence[int]) -> None:
        super().__init__(leaves)
        if len(partition_to_leaf) != PARTITION_COUNT:
            raise ValueError(f"a partition table needs {PARTITION_COUNT} entries")
        self._key_fn = key_fn
        self._table = list(partition_to_leaf)
        self._single_leaf = len(set(self._table)) == 1
        self._use_builtin_hash = isinstance(partitioner, HashPartitioner)
        self._partition_of = key_to_partition_fn(partitioner)

    def _distribute(self, chunk: list) -> None:
        pending = self._pending
        if self._single_leaf:
            pending[self._table[0]] = chunk
            return
        pieces: list[list] = [[] for _ in pending]
        appends = [piece.append for piece in pieces]
        table, key_fn = self._table, self._key_fn
        if self._use_builtin_hash and key_fn is whole_item:
            for item in chunk:
                appends[table[hash(item) % PARTITION_COUNT]](item)
        elif self._use_builtin_hash:
            for item in chunk:
                appends[table[hash(key_fn(item)) % PARTITION_COUNT]](item)
        else:
            partition_of = self._partition_of
            for item in chunk:
                appends[table[partition_of(key_fn(item))]](item)
        for index, piece in enumerate(pieces):
            pending[index] = piece or None


class SingleTargetCollector(OutboundCollector):
    """All-to-one: every chunk goes to one fixed leaf; DONE still reaches every leaf."""

    def __init__(self, leaves: Sequence[Leaf], target: int) -> None:
        super().__init__(leaves)
        if not 0 <= target < len(self.leaves):
            raise ValueError(f"target leaf {target} out of range")
        self._target = target

    def _distribute(self, chunk: list) -> None:
        self._pending[self._target] = chunk
