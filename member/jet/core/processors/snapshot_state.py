"""How the built-in processors lay out their state in a snapshot, and merge it back.

Three kinds of entries (see :mod:`jet.core.snapshot_keys`):

- **keyed state** is saved under the key the vertex's partitioned input edge routes by, so at
  restore it reaches the processor owning that key's partition, however many there are now. A
  key restored twice (two members' partial states of a first stage meet) is merged with the
  aggregate's ``combine`` (:func:`merge_keyed`);
- **the state of a one-processor stage** (a global aggregation, an unkeyed window, a global
  stateful mapping) is saved under the vertex's name (:func:`global_key`): the planner feeds
  such a vertex through ``all_to_one(vertex name)``, so the state is restored to the very
  processor that edge feeds, on whichever member owns that key now;
- **per-processor state** (source positions, partial accumulators of an unkeyed first stage,
  watermarks, window progress) goes under ``BroadcastKey((tag, global_index))``; every processor
  receives all of them and keeps its share (:func:`is_own_share`) or merges (minimum for
  progress that must agree).
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Iterable, Iterator

from jet.core.aggregate import AggregateOperation
from jet.core.processor import Context
from jet.core.snapshot_keys import BroadcastKey

_MISSING = object()


class SnapshotSaver:
    """Offers a processor's entries to the snapshot across several ``save_to_snapshot`` calls.

    ``offer(outbox, entries)`` starts iterating ``entries()`` on the first call of a save and goes
    on where it stopped on the next, so a state of a million keys goes out in portions while the
    cooperative thread serves other tasklets between them. The state must not change while a
    save is in progress (the engine calls nothing else of the processor until it returns True).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: Iterator[tuple[Any, Any]] | None = None

    @property
    def saving(self) -> bool:
        """True between the first and the last call of a save."""
        return self._entries is not None

    def offer(self, outbox: Any, entries: Callable[[], Iterable[tuple[Any, Any]]]) -> bool:
        """Offer the entries; True once all are in, False when the outbox is full (call again)."""
        if self._entries is None:
            self._entries = iter(entries())
        if not outbox.offer_some_to_snapshot(self._entries):
            return False
        self._entries = None
        return True


def global_key(context: Context) -> str:
    """The key the state of a one-processor stage is saved under: the vertex's name, which is
    the key of the ``all_to_one`` edge the planner feeds it through."""
    return context.vertex_name


def own_key(tag: str, context: Context) -> BroadcastKey:
    """``BroadcastKey((tag, global_index))``: per-processor state every processor receives."""
    return BroadcastKey((tag, context.global_index))


TABLE_PIECE_KEYS = 256
"""Keys of a lookup table per snapshot entry (:func:`table_pieces`)."""


def table_pieces(tag: str, context: Context, side: int, table: dict) -> Iterator[tuple[BroadcastKey, list]]:
    """A hash join's table as entries of at most :data:`TABLE_PIECE_KEYS` ``(key, value)`` pairs,
    each under ``BroadcastKey((tag, global_index, side))``: a large table is saved in portions."""
    items = iter(table.items())
    for piece in iter(lambda: list(islice(items, TABLE_PIECE_KEYS)), []):
        yield BroadcastKey((tag, context.global_index, side)), piece


def table_piece(key: Any, tag: str) -> tuple[int, int] | None:
    """``(saved global index, side)`` if ``key`` is a piece of :func:`table_pieces`, else None."""
    if type(key) is BroadcastKey and type(key.key) is tuple and len(key.key) == 3 and key.key[0] == tag:
        return key.key[1], key.key[2]
    return None


def tagged(key: Any, tag: str) -> int | None:
    """The saved global index if ``key`` is ``own_key(tag, ...)`` of some processor, else None."""
    if type(key) is BroadcastKey and type(key.key) is tuple and len(key.key) == 2 and key.key[0] == tag:
        return key.key[1]
    return None


def is_own_share(saved_index: int, context: Context) -> bool:
    """Whether the state processor ``saved_index`` saved is restored here: the one whose global
    index is ``saved_index % total_parallelism`` keeps it (Jet's rule for transaction ids)."""
    return saved_index % context.total_parallelism == context.global_index


def merge_keyed(accumulators: dict, key: Any, acc: Any, aggregate: AggregateOperation,
                vertex_name: str) -> None:
    """Put a restored accumulator in ``accumulators[key]``, combining with one already there."""
    current = accumulators.get(key, _MISSING)
    if current is _MISSING:
        accumulators[key] = acc
        return
    if aggregate.combine is None:
        raise ValueError(f"vertex {vertex_name!r}: the snapshot holds two states for key {key!r} and"
                         f" aggregate {aggregate.name!r} has no combine function to merge them")
    accumulators[key] = aggregate.combine(current, acc)


def unexpected_entry(vertex_name: str, processor: Any, key: Any) -> ValueError:
    """The error for a snapshot entry a processor does not know."""
    return ValueError(f"vertex {vertex_name!r}: {type(processor).__name__} cannot restore the snapshot"
                      f" entry with key {key!r}; was the snapshot taken of another job?")


def collect_positions(processor: Any, inbox: Any, restored: list | None) -> list:
    """A source's ``restore_from_snapshot``: every saved ``position`` value appended to
    ``restored`` (a new list when None); any other entry is an error naming the vertex."""
    restored = restored if restored is not None else []
    for key, value in inbox.take_chunk():
        if tagged(key, "position") is None:
            raise unexpected_entry(processor.context.vertex_name, processor, key)
        restored.append(value)
    return restored
