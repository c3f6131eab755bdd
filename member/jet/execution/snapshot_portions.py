"""A tasklet's part of a snapshot, taken in portions and laid out by partition group.

A processor offers its state through a bounded ``Outbox.offer_to_snapshot``; after every
``save_to_snapshot`` call the tasklet hands what was offered to :class:`SnapshotPortions`, which
splits it by group, pickles each group that gathered :data:`GROUP_BATCH` entries and the rest
when the save ends (before the processor changes its state again), and sizes the next portion so
it pickles to about :data:`PORTION_BYTES`: one call of a cooperative tasklet stays short however
large the state, and other tasklets run between the portions.

Keyed entries are split by **partition group**: a key's partition (the murmur partition its
vertex's input edge routes it by, which a restore uses too) modulo :data:`SNAPSHOT_GROUPS`.
Each group's pickled portions are concatenated into chunks of at most :data:`CHUNK_BYTES`,
named with their group, so a restore reads only the chunks of groups holding partitions its
member owns (:func:`group_is_owned`). Partition ``p`` belongs to member ``p % members``, so on a
member count dividing 60 a member reads exactly its share. Broadcast entries, keys of vertices
with another partitioner and keys without a canonical encoding go into group-less chunks that
every member reads, and so does a whole save smaller than :data:`SMALL_SAVE_BYTES` (no
sixty files for a few keys).

A chunk is a concatenation of pickles, each ``(vertex, entries)`` or, for entries that are single
window frames of events, their columns (:func:`jet.core.state_pickle.dumps_entries`); one pickle
is a chunk of the format before portions, which reads the same way.
"""

from __future__ import annotations

import io
import time
from collections import deque
from operator import call, itemgetter
from typing import Any, Callable, Iterator, Sequence

from jet.core.dag import DAG, Vertex
from jet.core.edge import Edge, RoutingPolicy
from jet.core.outbox import MIN_SNAPSHOT_PORTION, Outbox
from jet.core.partitioner import (DEFAULT_PARTITIONER, PARTITION_COUNT, HashPartitioner, MurmurHashPartitioner,
                                  Partitioner, murmur_partition, murmur_partitions)
from jet.core.snapshot_keys import BroadcastKey, ProcessorEnded
from jet.core.state_pickle import dumps_entries, dumps_state, load_entries

SNAPSHOT_GROUPS = 60
"""Partition groups of a snapshot's keyed chunks: partition ``p`` is in group ``p % 60``."""

PORTION_BYTES = 256 * 1024
"""The pickled size a portion aims at."""

PORTION_SECONDS = 0.003
"""The time a portion aims at (the processor's call and the pickling): whichever of size and
time is reached first bounds the next portion."""

MAX_PORTION = 8192
"""At most this many entries per portion, however small they pickle."""

GROUP_BATCH = 64
"""A group's entries are pickled once this many have gathered, across portions (the state stays
as it was at the barrier until the save ends), and the rest when it ends: a portion of a few
hundred entries spread over sixty groups would otherwise be pickled a few entries at a time, at
several times the cost per entry, and too few for the column form of window frames."""

CHUNK_BYTES = 1 << 20
"""A chunk file holds at most about this many bytes (one portion's part may overshoot it)."""

SMALL_SAVE_BYTES = 64 * 1024
"""A tasklet's save below this size is written as one chunk that every member reads."""

_first = itemgetter(0)
_ENGINE_KEYS = frozenset({BroadcastKey, ProcessorEnded})  # saved in chunks without a group
_group_of = (SNAPSHOT_GROUPS).__rmod__  # a partition's group: partition % SNAPSHOT_GROUPS
_NO_GROUP = SNAPSHOT_GROUPS  # the place of entries without a group while a portion is split

Chunk = tuple["int | None", list[bytes]]
"""(partition group, or None for a chunk every member reads; the pickles the chunk file is the
concatenation of, joined by the writer thread)."""


def partitioned_input(dag: DAG, vertex: Vertex) -> Edge | None:
    """The vertex's partitioned input edge that decides where its keys live (distributed first)."""
    edges = [e for e in dag.inbound_edges(vertex.name)
             if e.routing_policy is RoutingPolicy.PARTITIONED and e.all_to_one_key is None]
    edges.sort(key=lambda e: not e.is_distributed())
    return edges[0] if edges else None


def restore_partitioner(dag: DAG, vertex: Vertex) -> Partitioner:
    """The partitioner a restore routes the vertex's keyed entries by."""
    edge = partitioned_input(dag, vertex)
    partitioner = edge.partitioner if edge is not None else DEFAULT_PARTITIONER
    if isinstance(partitioner, HashPartitioner):
        return DEFAULT_PARTITIONER  # local-only edges may use hash(); keys must route stably here
    return partitioner


def grouping_partition_fn(dag: DAG, vertex: Vertex) -> Callable[[Any], int] | None:
    """The key -> partition function a snapshot groups the vertex's keys by; None when its keys
    route by a partitioner of the user's (those chunks are read by every member)."""
    return murmur_partition if isinstance(restore_partitioner(dag, vertex), MurmurHashPartitioner) else None


def group_is_owned(group: int, partition_owners: Sequence[int], member_index: int) -> bool:
    """Whether ``member_index`` owns a partition of ``group``."""
    return any(partition_owners[p] == member_index for p in range(group, PARTITION_COUNT, SNAPSHOT_GROUPS))


class SnapshotPortions:
    """One tasklet's save of one snapshot: portions split by group as they come, pickled in
    batches, chunked by group."""

    def __init__(self, vertex: str, partition_of: Callable[[Any], int] | None) -> None:
        """``partition_of``: the vertex's :func:`grouping_partition_fn` (None: no groups)."""
        self.vertex = vertex
        self._partition_of = partition_of
        self._groups: dict[int | None, list[bytes]] = {}
        self._pending: dict[int | None, list] = {}
        self.count = 0
        """Entries taken so far."""
        self.bytes = 0
        self._pickled = 0

    def take(self, outbox: Outbox, started: float) -> int:
        """Take what the processor offered since the last call (which began at ``started``, a
        ``perf_counter()``), pickle each group that gathered :data:`GROUP_BATCH` entries, size the
        next portion; the number of entries taken."""
        entries = outbox.snapshot_entries
        if not entries:
            return 0
        outbox.snapshot_entries = []
        pending = self._pending
        for group, part in self._split(entries).items():
            gathered = pending.get(group)
            if gathered is None:
                gathered = pending[group] = part
            else:
                gathered.extend(part)
            if len(gathered) >= GROUP_BATCH:
                self._pickle(group, gathered)
                del pending[group]
        self.count += len(entries)
        by_time = int(PORTION_SECONDS * len(entries) / max(1e-9, time.perf_counter() - started))
        by_size = PORTION_BYTES * self._pickled // max(1, self.bytes) if self._pickled else MAX_PORTION
        # At most doubling: one quick portion (a preempted clock, cheap keys) must not make the next huge.
        outbox.snapshot_capacity = max(MIN_SNAPSHOT_PORTION,
                                       min(MAX_PORTION, by_size, by_time, 2 * len(entries)))
        return len(entries)

    def _pickle(self, group: int | None, entries: list) -> None:
        data = dumps_entries(self.vertex, entries)
        self.bytes += len(data)
        self._pickled += len(entries)
        self._groups.setdefault(group, []).append(data)

    def _split(self, entries: list) -> dict[int | None, list]:
        partition_of = self._partition_of
        if partition_of is None:
            return {None: entries}
        groups = None
        keys = list(map(_first, entries))
        if partition_of is murmur_partition and _ENGINE_KEYS.isdisjoint(map(type, keys)):
            try:  # every key at once, in C passes for the commonest key shapes
                groups = list(map(_group_of, murmur_partitions(keys)))
            except Exception:  # noqa: BLE001 - a key without a canonical encoding: one by one below
                pass
        if groups is None:
            groups = list(map(self._group_of_key, keys))
            if None in groups:
                groups = [_NO_GROUP if group is None else group for group in groups]
        parts: list[list] = [[] for _ in range(_NO_GROUP + 1)]
        # each entry appended to its group's part in C passes, not a Python loop per entry
        deque(map(call, map([part.append for part in parts].__getitem__, groups), entries), maxlen=0)
        return {None if group == _NO_GROUP else group: part for group, part in enumerate(parts) if part}

    def _group_of_key(self, key: Any) -> int | None:
        if type(key) in _ENGINE_KEYS:
            return None
        try:
            return self._partition_of(key) % SNAPSHOT_GROUPS
        except Exception:  # noqa: BLE001 - no canonical encoding: every member reads it
            return None

    def chunks(self) -> list[Chunk]:
        """The chunks of everything taken (the groups still gathering pickled now, on the
        tasklet's thread, before the processor changes its state): one group-less chunk for a
        small save."""
        for group, gathered in self._pending.items():
            self._pickle(group, gathered)
        self._pending = {}
        if self.bytes < SMALL_SAVE_BYTES:
            pickles = [data for parts in self._groups.values() for data in parts]
            return [(None, pickles)] if pickles else []
        chunks: list[Chunk] = []
        for group, parts in self._groups.items():
            pending: list[bytes] = []
            size = 0
            for data in parts:
                if pending and size + len(data) > CHUNK_BYTES:
                    chunks.append((group, pending))
                    pending, size = [], 0
                pending.append(data)
                size += len(data)
            if pending:
                chunks.append((group, pending))
        return chunks


def entries_chunks(vertex: str, entries: list) -> list[Chunk]:
    """Entries saved at once (the engine's own markers) as group-less chunks."""
    return [(None, [dumps_state((vertex, entries))])] if entries else []


def chunk_pickles(data: bytes) -> Iterator[tuple[str, list]]:
    """The ``(vertex, entries)`` pickles a chunk's bytes hold, in order."""
    stream = io.BytesIO(data)
    while stream.tell() < len(data):
        yield load_entries(stream)
