"""The joiner of a hash join with one or more lookup sides (Jet's hashJoin2 and
hashJoinBuilder), left outer or inner.

Ordinal 0 is the primary stream (bare items, or ``(ts, item)`` pairs that keep their
timestamp); ordinals 1..n each receive the table of one lookup side from its
``HashJoinCollectP`` on a higher-priority edge, so every table is in before the first item.
An item is emitted once per combination of its matches (one per side); a side without a match
gives None (left outer), or drops the item (inner). ``mapper(item, match1, ..., matchN)``
makes the output; a None result is dropped.

Snapshots: the tables in pieces (``table_pieces``, side by side) announced under
``BroadcastKey(("tables", global_index))``, as the single hash join saves its table; each joiner
restores the copy of the first processor it gets one of, and a table collected again after the
restore (its lookup source started over) replaces the restored one.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Callable, Iterator, Sequence

from jet.core.inbox import Inbox
from jet.core.processors.snapshot_state import own_key, table_piece, table_pieces, tagged, unexpected_entry
from jet.core.processors.streaming import StreamingProcessor
from jet.core.special_items import Watermark

_NO_MATCH = (None,)


class HashJoinNP(StreamingProcessor):
    """Joins ordinal 0 with the lookup tables on ordinals 1..n."""

    def __init__(self, key_fns: Sequence[Callable[[Any], Any]], mapper: Callable[..., Any],
                 inner: bool, timestamped: bool) -> None:
        self._key_fns = tuple(key_fns)
        self._mapper = mapper
        self._inner = inner
        self._timestamped = timestamped
        self._tables: list[dict] = [{} for _ in key_fns]
        self._restored = [False] * len(key_fns)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if ordinal != 0:
            side = ordinal - 1
            if self._restored[side]:  # collected again: replaces the restored table
                self._tables[side], self._restored[side] = {}, False
            table = self._tables[side]
            for part in inbox.take_chunk():
                for key, matches in part.items():
                    table.setdefault(key, []).extend(matches)
            return
        if not self.emit_unfinished():
            return
        self.start_emitting(self._join(inbox.take_chunk(max(self.outbox.capacities, default=1024))))

    def _join(self, chunk: list) -> list:
        output: list = []
        append, mapper, inner = output.append, self._mapper, self._inner
        lookups = [(table.get, key_fn) for table, key_fn in zip(self._tables, self._key_fns)]
        for entry in chunk:
            ts, item = entry if self._timestamped else (None, entry)
            sides = []
            for get, key_fn in lookups:
                matches = get(key_fn(item))
                if matches is None:
                    if inner:
                        break
                    matches = _NO_MATCH
                sides.append(matches)
            else:
                for combination in product(*sides):
                    result = mapper(item, *combination)
                    if result is not None:
                        append((ts, result) if self._timestamped else result)
        return output

    def try_process_watermark(self, watermark: Watermark) -> bool:
        # What was joined before the watermark goes out before it.
        return self.emit_unfinished() and self.outbox.offer_watermark(watermark)

    def complete(self) -> bool:
        return self.emit_unfinished()

    _restoring_from: int | None = None
    """The saved global index whose copy of the tables this processor restores."""

    def save_to_snapshot(self) -> bool:
        return self.save_entries(self._saved_entries)

    def _saved_entries(self) -> Iterator[tuple[Any, Any]]:
        yield own_key("tables", self.context), len(self._tables)
        for side, table in enumerate(self._tables):
            yield from table_pieces("tables", self.context, side, table)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, value in inbox.take_chunk():
            index, side = tagged(key, "tables"), None
            if index is None:
                piece = table_piece(key, "tables")
                if piece is None:
                    raise unexpected_entry(self.context.vertex_name, self, key)
                index, side = piece
            if self._restoring_from is None:
                self._restoring_from = index
                self._tables = [{} for _ in self._key_fns]
                self._restored = [True] * len(self._key_fns)
            if index != self._restoring_from:
                continue  # another processor's copy
            if type(value) is list and side is None:  # a snapshot taken before pieces: every table
                self._tables = [dict(table) for table in value]
            elif side is not None:
                self._tables[side].update(value)


def hash_join_n_p(key_fns: Sequence[Callable[[Any], Any]], mapper: Callable[..., Any], inner: bool,
                  timestamped: bool) -> Callable[[], HashJoinNP]:
    """The supplier of a joiner of ``len(key_fns)`` lookup sides."""
    return lambda: HashJoinNP(key_fns, mapper, inner, timestamped)
