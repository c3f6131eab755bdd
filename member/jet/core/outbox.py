"""The outbox a processor emits into: one bounded bucket per output ordinal."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from jet.core.edge import DEFAULT_OUTBOX_CAPACITY
from jet.core.special_items import SpecialItem


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

    __slots__ = ("buckets", "capacities", "_all", "pending_special", "_open_capacities", "snapshot_entries")

    def __init__(self, bucket_count: int,
                 capacities: Sequence[int] | int = DEFAULT_OUTBOX_CAPACITY) -> None:
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

    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        """Save one entry of the processor's state into the snapshot being taken.

        Only valid from ``save_to_snapshot`` and ``snapshot_commit_prepare``. Jet's may refuse
        (False) when its buffer is full, and a processor must then offer the same entry again;
        this one buffers the whole state of the processor and always accepts."""
        self.snapshot_entries.append((key, value))
        return True

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
