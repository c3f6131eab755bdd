"""What a stream source still has to emit: chunks and watermarks, in order, resumable.

Every stream source of this package collects its output here. Without an event-time policy the
chunks are bare items. With one, an :class:`~jet.core.event_time.EventTimeMapper` (one watermark
tracker per source partition) turns each chunk into timestamped pairs ``(ts, item)`` and says
when a watermark is due; the watermark goes out after the chunk, as its own element.
"""

from __future__ import annotations

import time
from collections import deque

from jet.core.event_time import EventTimePolicy
from jet.core.outbox import Outbox
from jet.core.special_items import Watermark


def wall_clock_ms() -> int:
    """Milliseconds since the epoch (event time is wall-clock time)."""
    return time.time_ns() // 1_000_000


class StreamEmitter:
    """A queue of chunks and watermarks that :meth:`flush` hands to an outbox as it has room."""

    __slots__ = ("_pending", "_mapper")

    def __init__(self, policy: EventTimePolicy | None = None, partitions: int = 1) -> None:
        self._pending: deque = deque()
        self._mapper = None
        if policy is not None:
            from jet.core.event_time import EventTimeMapper  # the windows' module; only with a policy
            self._mapper = EventTimeMapper(policy)
            self._mapper.add_partitions(partitions)

    @property
    def mapper(self):
        """The event-time mapper (None without a policy): a source saves its watermarks."""
        return self._mapper

    @property
    def timestamped(self) -> bool:
        """Whether items go out as ``(ts, item)`` pairs followed by watermarks."""
        return self._mapper is not None

    def add(self, items: list, partition: int = 0, now_ms: int = 0,
            timestamps: list[int] | None = None) -> None:
        """Queue ``items`` (a list this emitter now owns); ``timestamps`` are their native ones."""
        mapper = self._mapper
        if mapper is None:
            if items:
                self._pending.append(items)
            return
        pairs, watermark = mapper.map_chunk(items, partition, now_ms, timestamps)
        if pairs:
            self._pending.append(pairs if type(pairs) is list else list(pairs))
        if watermark is not None:
            self._pending.append(watermark)

    def idle(self, now_ms: int) -> None:
        """No new items now: let the policy advance the watermark or mark the partitions idle."""
        if self._mapper is not None:
            self._pending.extend(self._mapper.on_idle(now_ms))

    def has_pending(self) -> bool:
        return bool(self._pending)

    def flush(self, outbox: Outbox) -> bool:
        """Offer what is queued; True once everything is in the outbox.

        After a watermark is accepted the outbox refuses everything until the engine has
        passed it on, so a flush stops there and the caller returns to the engine."""
        pending = self._pending
        while pending:
            entry = pending[0]
            if type(entry) is Watermark:
                if not outbox.offer_watermark(entry):
                    return False
                pending.popleft()
                return not pending
            if not outbox.offer_chunk(entry):
                return False
            pending.popleft()
        return True
