"""Which processor restores which snapshot entry (Jet's restore edges, without the extra vertices).

Jet reads a snapshot through a ``__snapshot_read`` vertex and one distributed edge per user
vertex, partitioned by the entry's key. Here each member reads its part of the snapshot (the
chunks :func:`chunk_filter` wants: those of partition groups it owns partitions of, and those
without a group) and keeps the entries its processors own, by the same rule, so state lands
where the new plan routes its keys however many members the snapshot was taken on:

- an entry under a :class:`~jet.core.snapshot_keys.BroadcastKey` goes to every processor of its
  vertex (each keeps its share: sources by their index, merged values by minimum);
- any other key's partition comes from the vertex's partitioned input edge (its partitioner, or
  the default one); the partition's owner member keeps it, and gives it to the local processor
  that edge would route the key to (the owned-partition table of a distributed edge, the local
  table of a local one).

Entries of a vertex the DAG no longer has are skipped with one warning per vertex (an upgraded
pipeline that renamed or dropped it).

:class:`~jet.core.snapshot_keys.ProcessorEnded` entries say which processors had finished. When
every processor of a vertex had, each of its new processors starts finished
(:data:`PROCESSOR_FINISHED` instead of its entries); when some had and the vertex's total
parallelism is the same, the processors with their global indices start finished; otherwise the
finished ones' work runs again, with a warning (at-least-once for that vertex). A processor that
gets keyed entries by partition (another processor's state, over a local partitioned edge) is
never started finished: it restores them and emits them when it completes.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable

from jet.core.dag import DAG, Vertex
from jet.core.partitioner import key_to_partition_fn
from jet.core.snapshot_keys import BroadcastKey, ProcessorEnded
from jet.execution.plan import MemberTopology, local_partition_table, owned_partition_table
from jet.execution.snapshot_context import PROCESSOR_FINISHED
from jet.execution.snapshot_portions import (SNAPSHOT_GROUPS, group_is_owned, grouping_partition_fn,
                                             partitioned_input, restore_partitioner)

log = logging.getLogger("jet.execution.snapshot")

RestoreEntries = dict[tuple[str, int], "list | object"]
"""Per (vertex name, local processor index): the (key, value) entries it restores, or
:data:`PROCESSOR_FINISHED`."""


class _VertexRouting:
    """Where one vertex's keyed entries go on this member."""

    def __init__(self, dag: DAG, vertex: Vertex, local_parallelism: int, topology: MemberTopology) -> None:
        self.local_parallelism = local_parallelism
        edge = partitioned_input(dag, vertex)
        self.partition_of: Callable[[object], int] = key_to_partition_fn(restore_partitioner(dag, vertex),
                                                                         distributed=True)
        self.owners = topology.partition_owners
        self.member = topology.member_index
        if edge is not None and edge.is_distributed():
            owned = owned_partition_table(self.owners, self.member, local_parallelism)
            self.local_of = lambda p: owned[p]
        else:
            table = local_partition_table(local_parallelism)
            self.local_of = lambda p: table[p]

    def local_index(self, key: object) -> int | None:
        """The local processor that restores ``key``, or None when another member owns it."""
        partition = self.partition_of(key)
        if self.owners[partition] != self.member:
            return None
        return self.local_of(partition)


def chunk_filter(dag: DAG, topology: MemberTopology) -> Callable[[str, "int | None"], bool]:
    """``wanted(vertex, group)``: whether this member reads a snapshot chunk of ``vertex`` and
    partition group ``group`` (None: a chunk every member reads). A member skips the chunks of
    groups holding none of its partitions, of vertices whose keys it routes by murmur as the
    writer grouped them (see :mod:`jet.execution.snapshot_portions`)."""
    owned = [group_is_owned(g, topology.partition_owners, topology.member_index) for g in range(SNAPSHOT_GROUPS)]
    grouped = {v.name for v in dag.vertices if grouping_partition_fn(dag, v) is not None}

    def wanted(vertex: str, group: int | None) -> bool:
        return group is None or vertex not in grouped or not 0 <= group < SNAPSHOT_GROUPS or owned[group]
    return wanted


def route_restore_entries(entries: Iterable[tuple[str, object, object]], dag: DAG,
                          local_parallelism: dict[str, int], topology: MemberTopology) -> RestoreEntries:
    """Split a snapshot's (vertex, key, value) entries among this member's processors."""
    routed: RestoreEntries = {(name, i): [] for name, lp in local_parallelism.items() for i in range(lp)}
    routing: dict[str, _VertexRouting] = {}
    unknown: set[str] = set()
    ended: dict[str, dict[int, int]] = {}
    for vertex_name, key, value in entries:
        lp = local_parallelism.get(vertex_name)
        if lp is None:
            if vertex_name not in unknown:
                unknown.add(vertex_name)
                log.warning("the snapshot has state of vertex %r, which this job does not have; it is skipped",
                            vertex_name)
            continue
        if type(key) is BroadcastKey:
            for index in range(lp):
                routed[(vertex_name, index)].append((key, value))
            continue
        if type(key) is ProcessorEnded:
            ended.setdefault(vertex_name, {})[key.global_index] = key.total_parallelism
            continue
        router = routing.get(vertex_name)
        if router is None:
            router = routing[vertex_name] = _VertexRouting(dag, dag.get_vertex(vertex_name), lp, topology)
        index = router.local_index(key)
        if index is not None:
            routed[(vertex_name, index)].append((key, value))
    for vertex_name, finished in ended.items():
        _mark_finished(routed, vertex_name, finished, local_parallelism[vertex_name], topology)
    return routed


def _mark_finished(routed: RestoreEntries, vertex: str, finished: dict[int, int], lp: int,
                   topology: MemberTopology) -> None:
    """Replace the entries of processors that start finished (see the module docstring)."""
    old_total = max(finished.values())
    new_total = lp * topology.member_count
    if len(finished) >= old_total:
        indices = range(lp)
    elif old_total == new_total:
        indices = [i for i in range(lp) if topology.member_index * lp + i in finished]
    else:
        log.warning("vertex %r: %d of its %d processors had finished when the snapshot was taken and it now has "
                    "%d processors: their work runs again", vertex, len(finished), old_total, new_total)
        return
    for index in indices:
        entries = routed[(vertex, index)]
        # Keyed state routed here by partition (another processor's, on a local edge) must still
        # be restored and, at complete(), emitted: such a processor runs again.
        if not any(type(key) is not BroadcastKey for key, _ in entries):
            routed[(vertex, index)] = PROCESSOR_FINISHED
