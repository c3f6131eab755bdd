"""The processors of a hash join: a collector of the lookup side and the joiner.

Snapshots: the collector's partial table and the joiner's table go under
``BroadcastKey(("table", global_index))``. Every collector receives the whole lookup side
(broadcast) and every joiner the whole table, so the copies are equal and each processor
restores the first copy it gets. Saving the tables (rather than collecting again) is what the
restore order needs: a lookup source that had finished saved no position, so it is not read
again unless it starts from scratch. When it does (it starts from the beginning after a
restore), the table the collector emits then *replaces* the joiner's restored table, so no
match is doubled.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.processors import ChunkEmittingProcessor
from jet.core.processors.snapshot_state import own_key, tagged, unexpected_entry
from jet.core.special_items import Watermark

_NO_MATCH = [None]
_NOTHING = object()


class _TableStateP(ChunkEmittingProcessor):
    """Saves ``_table`` (once it holds the lookup side) and restores the first copy.

    A collector that already emitted its table saves the value None instead."""

    _table: dict
    _has_table = False
    _restored_table = False
    _emitted_before_restore = False

    def _table_to_save(self) -> Any:
        """The value to save: the table, None (emitted already) or ``_NOTHING``."""
        return self._table if self._has_table else _NOTHING

    def save_to_snapshot(self) -> bool:
        if not self.finish_emitting():
            return False
        value = self._table_to_save()
        if value is not _NOTHING:
            self.outbox.offer_to_snapshot(own_key("table", self.context), value)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, table in inbox.take_chunk():
            if tagged(key, "table") is None:
                raise unexpected_entry(self.context.vertex_name, self, key)
            if table is None:
                self._emitted_before_restore = True
            elif not self._restored_table:
                self._table, self._has_table, self._restored_table = table, True, True


class HashJoinCollectP(_TableStateP):
    """Builds key -> [items] from the whole lookup side, then emits that table once."""

    def __init__(self, key_fn: Callable[[Any], Any]) -> None:
        self._key_fn = key_fn
        self._table: dict[Any, list] = {}
        self._output: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        setdefault, key_fn = self._table.setdefault, self._key_fn
        for item in inbox.take_chunk():
            setdefault(key_fn(item), []).append(item)
        self._has_table = True

    def _table_to_save(self) -> Any:
        # Once emitted, the table is the joiners' state; a restored collector emits nothing.
        return None if self._output is not None else super()._table_to_save()

    def complete(self) -> bool:
        if self._emitted_before_restore:
            return True
        if self._output is None:
            self._output = [self._table]
        return self.emit_list(self._output)


class HashJoinP(_TableStateP):
    """Joins stream items (ordinal 0) with the lookup table (ordinal 1, read first)."""

    def __init__(self, key_fn: Callable[[Any], Any], mapper: Callable[[Any, Any], Any]) -> None:
        self._key_fn = key_fn
        self._mapper = mapper
        self._table: dict[Any, list] = {}
        self._pending: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal != 0:
            if self._restored_table:  # the lookup side was collected again: it replaces the restored
                self._table, self._restored_table = {}, False
            self._has_table = True
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
