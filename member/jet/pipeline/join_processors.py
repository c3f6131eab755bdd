"""The processors of a hash join: a collector of the lookup side and the joiner."""

from __future__ import annotations

from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.processors import ChunkEmittingProcessor
from jet.core.special_items import Watermark

_NO_MATCH = [None]


class HashJoinCollectP(ChunkEmittingProcessor):
    """Builds key -> [items] from the whole lookup side, then emits that table once."""

    def __init__(self, key_fn: Callable[[Any], Any]) -> None:
        self._key_fn = key_fn
        self._table: dict[Any, list] = {}
        self._output: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        setdefault, key_fn = self._table.setdefault, self._key_fn
        for item in inbox.take_chunk():
            setdefault(key_fn(item), []).append(item)

    def complete(self) -> bool:
        if self._output is None:
            self._output = [self._table]
        return self.emit_list(self._output)


class HashJoinP(ChunkEmittingProcessor):
    """Joins stream items (ordinal 0) with the lookup table (ordinal 1, read first)."""

    def __init__(self, key_fn: Callable[[Any], Any], mapper: Callable[[Any, Any], Any]) -> None:
        self._key_fn = key_fn
        self._mapper = mapper
        self._table: dict[Any, list] = {}
        self._pending: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal != 0:
            for table in inbox.take_chunk():
                for key, matches in table.items():
                    self._table.setdefault(key, []).extend(matches)
            return
        if self._pending is not None:
            if not self.emit_list(self._pending):
                return
            self._pending = None
        joined = self._join(inbox.take_chunk(max(self.outbox.capacities, default=1024)))
        if not self.emit_list(joined):
            self._pending = joined

    def _join(self, chunk: list) -> list:
        get, key_fn, mapper = self._table.get, self._key_fn, self._mapper
        return [mapper(item, match) for item in chunk for match in get(key_fn(item), _NO_MATCH)]

    def try_process_watermark(self, watermark: Watermark) -> bool:
        # What was joined before the watermark goes out before it.
        return self.complete() and self.outbox.offer_watermark(watermark)

    def complete(self) -> bool:
        if self._pending is not None:
            if not self.emit_list(self._pending):
                return False
            self._pending = None
        return True


class TimestampedHashJoinP(HashJoinP):
    """A joiner of a stream with timestamps: items arrive as (timestamp, item) pairs, and each
    joined result keeps its item's timestamp."""

    def _join(self, chunk: list) -> list:
        get, key_fn, mapper = self._table.get, self._key_fn, self._mapper
        return [(ts, mapper(item, match)) for ts, item in chunk
                for match in get(key_fn(item), _NO_MATCH)]
