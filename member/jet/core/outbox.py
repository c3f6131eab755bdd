"""The outbox a processor emits into: one bounded bucket per output ordinal."""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Iterator, Sequence

from jet.core.edge import DEFAULT_OUTBOX_CAPACITY
from jet.core.special_items import SpecialItem

SNAPSHOT_PORTION = 1024
"""Entries ``offer_to_snapshot`` takes per call of ``save_to_snapshot`` at first; the engine then
sizes the portion so it pickles to about ``SNAPSHOT_PORTION_BYTES`` (see
:mod:`jet.execution.snapshot_portions`), never below :data:`MIN_SNAPSHOT_PORTION`."""

MIN_SNAPSHOT_PORTION = 16
"""A ``save_to_snapshot`` call may always offer this many entries: a processor saving a few
entries (a source's offsets, a watermark) needs no resumption."""


class Outbox:
    """Buckets of emitted items, one per output ordinal, drained by the engine after each call.

    ``offer`` returns False when a target bucket is full; the processor must then return from
    its call and offer the *same* item to the *same* ordinals next time. An offer to several
    ordinals is all-or-nothing, so a retried item is never delivered twice.

    A watermark (``offer_watermark``) goes to every ordinal after everything offered before
    it and before anything offered after it: once accepted it is *pending* until the engine
    has handed the buckets and then the watermark downstream, and until then every offer is
    refused (the capacities read as zero), so a chunk always ends where a special item goes.
    """

    __slots__ = ("buckets", "capacities", "_all", "pending_special", "_open_capacities", "snapshot_entries",
                 "snapshot_capacity", "snapshot_refused")

    def __init__(self, bucket_count: int,
                 capacities: Sequence[int] | int = DEFAULT_OUTBOX_CAPACITY,
                 snapshot_capacity: int = SNAPSHOT_PORTION) -> None:
        if isinstance(capacities, int):
            capacities = [capacities] * bucket_count
        if len(capacities) != bucket_count:
            raise ValueError("one capacity per bucket is needed")
        self.buckets: list[list] = [[] for _ in range(bucket_count)]
        self.capacities = list(capacities)
        self._all = tuple(range(bucket_count))
        self.pending_special: SpecialItem | None = None
        """A special item accepted and not yet handed downstream by the engine."""
        self._open_capacities = self.capacities
        self.snapshot_entries: list[tuple[Any, Any]] = []
        """Entries saved by ``offer_to_snapshot`` and not yet taken by the engine."""
        self.snapshot_capacity = max(MIN_SNAPSHOT_PORTION, snapshot_capacity)
        """How many entries ``snapshot_entries`` holds before ``offer_to_snapshot`` refuses (the
        engine adjusts it between calls)."""
        self.snapshot_refused = False
        """Whether ``offer_to_snapshot`` refused an entry since the engine last cleared this: a
        processor that then reports its save done would lose that entry."""

    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        """Save one entry of the processor's state into the snapshot being taken.

        Only valid from ``save_to_snapshot`` and ``snapshot_commit_prepare``. Returns False,
        as Jet's does, once the snapshot buffer holds a portion: the processor must then return
        False and offer the same entry again on the next call, after the engine has pickled
        the portion and let other tasklets run. The engine takes everything offered after each
        call and calls nothing else of the processor until the save is over, so its state stays
        as it was at the barrier across the calls. The first call of a save may offer
        :data:`SNAPSHOT_PORTION` entries and every call :data:`MIN_SNAPSHOT_PORTION`: a
        processor saving fewer needs no resumption."""
        entries = self.snapshot_entries
        if len(entries) >= self.snapshot_capacity:
            self.snapshot_refused = True
            return False
        entries.append((key, value))
        return True

    def offer_some_to_snapshot(self, entries: Iterator[tuple[Any, Any]]) -> bool:
        """Save ``(key, value)`` entries from ``entries`` until the snapshot buffer holds a
        portion, at once (no call per entry); True once ``entries`` ran out. On False, call
        again with the same iterator on the next call of the save, as after a refused
        :meth:`offer_to_snapshot`."""
        buffer = self.snapshot_entries
        room = self.snapshot_capacity - len(buffer)
        if room <= 0:
            return False
        before = len(buffer)
        buffer.extend(islice(entries, room))
        return len(buffer) - before < room

    def offer_watermark(self, watermark: SpecialItem) -> bool:
        """Offer a watermark to every ordinal; False while an earlier one is still pending.

        After True, every offer is refused until the engine has passed the watermark on."""
        if self.pending_special is not None:
            return False
        self.pending_special = watermark
        self._open_capacities = self.capacities
        self.capacities = [0] * len(self.buckets)
        return True

    def special_taken(self) -> None:
        """Engine: the pending special item went downstream; offers are accepted again."""
        self.pending_special = None
        self.capacities = self._open_capacities

    def bucket_count(self) -> int:
        return len(self.buckets)

    def offer(self, item: Any, ordinal: int | Iterable[int] | None = None) -> bool:
        """Offer one item to ``ordinal`` (None or -1: every ordinal; or a list of ordinals)."""
        buckets = self.buckets
        if ordinal is None or ordinal == -1:
            if len(buckets) == 1:
                bucket = buckets[0]
                if len(bucket) >= self.capacities[0]:
                    return False
                bucket.append(item)
                return True
            ordinals = self._all
        elif isinstance(ordinal, int):
            bucket = buckets[ordinal]
            if len(bucket) >= self.capacities[ordinal]:
                return False
            bucket.append(item)
            return True
        else:
            ordinals = tuple(ordinal)
        capacities = self.capacities
        for o in ordinals:
            if len(buckets[o]) >= capacities[o]:
                return False
        for o in ordinals:
            buckets[o].append(item)
        return True

    def offer_chunk(self, items: list, ordinal: int | Iterable[int] | None = None) -> bool:
        """Offer a whole list of items; accepted whole while every target bucket has room.

        A bucket below its capacity takes the whole chunk, so a bucket may overshoot its
        capacity by up to one chunk (as a network packet may overshoot by one item). The
        outbox takes ownership of ``items`` when it returns True: do not change the list after.
        """
        if not items:
            return True
        buckets, capacities = self.buckets, self.capacities
        if ordinal is None or ordinal == -1:
            ordinals = self._all
        elif isinstance(ordinal, int):
            ordinals = (ordinal,)
        else:
            ordinals = tuple(ordinal)
        for o in ordinals:
            if len(buckets[o]) >= capacities[o]:
                return False
        for o in ordinals:
            bucket = buckets[o]
            if bucket:
                bucket.extend(items)
            else:
                buckets[o] = list(items) if len(ordinals) > 1 else items
        return True

    def has_room(self, ordinal: int | None = None) -> bool:
        """True when an offer to ``ordinal`` (None: every ordinal) would be accepted now."""
        if ordinal is None or ordinal == -1:
            return all(len(b) < c for b, c in zip(self.buckets, self.capacities))
        return len(self.buckets[ordinal]) < self.capacities[ordinal]

    def pending_count(self) -> int:
        """Items emitted and not yet taken by the engine."""
        return sum(len(b) for b in self.buckets)

    def __repr__(self) -> str:
        return f"Outbox({[len(b) for b in self.buckets]} of {self.capacities})"
