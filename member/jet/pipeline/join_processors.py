"""The processors of a hash join: a collector of the lookup side and the joiner.

Snapshots: the collector's partial table and the joiner's table go in pieces of a few hundred
keys (``table_pieces``: a large table is saved over several calls), announced by an entry under
``BroadcastKey(("table", global_index))`` (None: the collector had emitted its table). Every
collector receives the whole lookup side (broadcast) and every joiner the whole table, so the
copies are equal and each processor restores the copy of the first processor it gets one of (a
snapshot taken before pieces holds the whole table in that entry). Saving the tables (rather than collecting again) is what the
restore order needs: a lookup source that had finished saved no position, so it is not read
again unless it starts from scratch. When it does (it starts from the beginning after a
restore), the table the collector emits then *replaces* the joiner's restored table, so no
match is doubled.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from jet.core.inbox import Inbox
from jet.core.processors import ChunkEmittingProcessor
from jet.core.processors.snapshot_state import own_key, table_piece, table_pieces, tagged, unexpected_entry
from jet.core.special_items import Watermark

_NO_MATCH = [None]
_NOTHING = object()
_IN_PIECES = "in pieces"


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

    _restoring_from: int | None = None
    """The saved global index whose copy of the table this processor restores."""

    def save_to_snapshot(self) -> bool:
        return self.save_entries(self._saved_entries)

    def _saved_entries(self) -> Iterator[tuple[Any, Any]]:
        value = self._table_to_save()
        if value is _NOTHING:
            return
        yield own_key("table", self.context), None if value is None else _IN_PIECES
        if value is not None:
            yield from table_pieces("table", self.context, 0, value)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, value in inbox.take_chunk():
            index = tagged(key, "table")
            if index is None:
                piece = table_piece(key, "table")
                if piece is None:
                    raise unexpected_entry(self.context.vertex_name, self, key)
                index = piece[0]
            if value is None:
                self._emitted_before_restore = True
                continue
            if self._restoring_from is None:
                self._restoring_from, self._table, self._has_table, self._restored_table = index, {}, True, True
            if index != self._restoring_from or value == _IN_PIECES:
                continue  # another processor's copy, or the announcement of the pieces
            if type(value) is dict:  # a snapshot taken before pieces: the whole table
                self._table = value
            else:
                self._table.update(value)


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
