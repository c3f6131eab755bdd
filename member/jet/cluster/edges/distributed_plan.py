"""The execution plan of one member in a cluster: local wiring plus distributed edges.

For a distributed edge each member has, besides its local queues,
- one SenderTasklet per remote member, fed by one queue from every local upstream processor;
- one ReceiverTasklet per remote member, owning one queue in every local downstream
  processor's conveyor (placed after the local queues);
and every upstream processor's collector composes the local leaves with the senders under the
edge's policy: unicast round-robins over members with the local processors as one slot,
broadcast sends once per member (the receiver re-broadcasts locally), partitioned sends each
partition to its owner member, whose receiver routes by the partition id the item carries.

An execution may run on a subset of the cluster's members (a job that went on without a lost
member): its topology counts *positions* in the execution's member list, while senders,
receivers and frames name the physical member indices, which ``members`` maps positions to.
"""

from __future__ import annotations

import functools
from itertools import compress
from operator import itemgetter
from typing import Any, Sequence

from jet.cluster.edges.done_relay import DoneRelay, RelayCompletionTasklet
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.cluster.edges.sender import SenderTasklet
from jet.core.dag import DAG
from jet.core.edge import Edge, EdgeConfig, RoutingPolicy
from jet.core.functions import whole_item
from jet.core.partitioner import PARTITION_COUNT, HashPartitioner, chunk_partitions_fn, murmur_partition
from jet.execution.inbound import InboundEdgeStream
from jet.execution.outbound import BroadcastCollector, OutboundCollector, RoundRobinCollector, SingleTargetCollector
from jet.execution.plan import ExecutionPlan, MemberTopology, owned_partition_table
from jet.execution.queues import UNBOUNDED, SpscQueue
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.tasklet_group import grouped


#: Up to this many leaves a collector splits a chunk with one C-level pass per leaf; beyond, in
#: one Python loop over the items.
MAX_MASKED_LEAVES = 4
_second = itemgetter(1)


def partition_owners(member_count: int) -> list[int]:
    """The partition -> member table of an execution on ``member_count`` members (their
    positions in the execution's member list)."""
    return [p % member_count for p in range(PARTITION_COUNT)]


def check_execution_members(members: Sequence[int], cluster_size: int) -> list[int]:
    """``members`` as a list, or a ``ValueError`` unless it is a non-empty ascending list of
    distinct member indices below ``cluster_size``."""
    members = list(members)
    if (not members or any(not isinstance(m, int) or isinstance(m, bool) for m in members)
            or members != sorted(set(members)) or members[0] < 0 or members[-1] >= cluster_size):
        raise ValueError(f"an execution's members must be distinct member indices 0..{cluster_size - 1} in "
                         f"ascending order, got {members!r}")
    return members


class CollectorLeaf:
    """A collector used as one leaf of another (the local processors as one slot)."""

    def __init__(self, collector: OutboundCollector) -> None:
        self.collector = collector

    def offer_chunk(self, chunk: list) -> int:
        return len(chunk) if self.collector.offer_chunk(chunk) else 0

    def offer_special(self, item: Any) -> bool:
        return self.collector.offer_special(item)


class DistributedPartitionedCollector(OutboundCollector):
    """Partition -> local processor or remote member; remote entries carry their partition
    when ``remote_pairs`` (the receiving member has several processors to route them to)."""

    def __init__(self, leaves: list, key_fn: Any, partitioner: Any, table: list[int],
                 remote_from: int, remote_pairs: bool = True) -> None:
        super().__init__(leaves)
        self._key_fn, self._table, self._remote_from = key_fn, table, remote_from
        self._remote_pairs = remote_pairs
        self._item_key = getattr(key_fn, "item_key", None)
        """The key function of a timestamped pair's item, when ``key_fn`` is :func:`key_of_pair`'s."""
        self._partitions_of = chunk_partitions_fn(partitioner, distributed=True)

    def _distribute(self, chunk: list) -> None:
        # Whole-chunk passes in C (map, compress, zip) rather than a Python loop per item: this
        # runs for every item a keyed distributed edge carries.
        if not chunk:
            return
        key_fn = self._key_fn
        if key_fn is whole_item:
            keys = chunk
        elif self._item_key is not None:
            keys = list(map(self._item_key, map(_second, chunk)))
        else:
            keys = list(map(key_fn, chunk))
        partitions = self._partitions_of(keys)
        targets = list(map(self._table.__getitem__, partitions))
        pending, remote_from, pairs = self._pending, self._remote_from, self._remote_pairs
        first = targets[0]
        if targets.count(first) == len(targets):
            pending[first] = list(zip(chunk, partitions)) if pairs and first >= remote_from else chunk
            return
        if len(pending) > MAX_MASKED_LEAVES:
            self._distribute_by_loop(chunk, partitions, targets)
            return
        for index in range(len(pending)):
            mask = list(map(index.__eq__, targets))
            if True not in mask:
                pending[index] = None
            elif pairs and index >= remote_from:
                pending[index] = list(zip(compress(chunk, mask), compress(partitions, mask)))
            else:
                pending[index] = list(compress(chunk, mask))

    def _distribute_by_loop(self, chunk: list, partitions: list[int], targets: list[int]) -> None:
        """Many leaves: one pass appending each item to its leaf's piece."""
        pieces: list[list] = [[] for _ in self.leaves]
        appends = [piece.append for piece in pieces]
        remote_from = self._remote_from if self._remote_pairs else len(pieces)
        for item, partition, target in zip(chunk, partitions, targets):
            appends[target]((item, partition) if target >= remote_from else item)
        for index, piece in enumerate(pieces):
            self._pending[index] = piece or None


class PartitionIdCollector(OutboundCollector):
    """A receiver's local routing: (item, partition id) pairs to the partition's processor."""

    def __init__(self, leaves: list, table: dict[int, int]) -> None:
        super().__init__(leaves)
        self._table = [table.get(p, 0) for p in range(PARTITION_COUNT)]

    def _distribute(self, chunk: list) -> None:
        pieces: list[list] = [[] for _ in self.leaves]
        appends = [piece.append for piece in pieces]
        table = self._table
        for item, partition in chunk:
            appends[table[partition]](item)
        for index, piece in enumerate(pieces):
            self._pending[index] = piece or None


class DistributedExecutionPlan(ExecutionPlan):
    """An ExecutionPlan whose distributed edges cross members through the MemberNetwork."""

    def __init__(self, dag: DAG, *, network: MemberNetwork, execution_id: int,
                 topology: MemberTopology, cooperative_threads: int = 1,
                 edge_defaults: EdgeConfig | None = None, flow_control_period_ms: int = 100,
                 job_id: str = "job", snapshot_context: SnapshotContext | None = None,
                 restore_entries: dict[tuple[str, int], list] | None = None,
                 members: Sequence[int] | None = None) -> None:
        """``members``: the physical member index at each position of ``topology`` (default:
        position i is member i)."""
        super().__init__(dag, cooperative_threads=cooperative_threads,
                         edge_defaults=edge_defaults, topology=topology, job_id=job_id,
                         snapshot_context=snapshot_context, restore_entries=restore_entries)
        self.network = network
        self.execution_id = execution_id
        self.period_ns = flow_control_period_ms * 1_000_000
        self.vertex_ids = {v.name: i for i, v in enumerate(self.order)}
        self.senders: dict[tuple[int, int, int, int], SenderTasklet] = {}
        self.receivers: dict[tuple[int, int, int, int], ReceiverTasklet] = {}
        self.members = list(range(topology.member_count) if members is None else members)
        if len(self.members) != topology.member_count:
            raise ValueError(f"the execution's members {self.members} do not match its topology of "
                             f"{topology.member_count} members")
        self.remote_members = [m for position, m in enumerate(self.members) if position != topology.member_index]
        """The physical indices of the other members of the execution, in position order."""
        self._remote_leaf = {position: self.remote_members.index(m) for position, m in enumerate(self.members)
                             if position != topology.member_index}
        self._relay_receivers: dict[tuple[int, int, int], ReceiverTasklet] = {}
        self._senders_per_edge: dict[tuple[int, int], int] = {}
        self._edge_names: dict[tuple[int, int], str] = {}
        self.done_relay = DoneRelay(execution_id, self.members[topology.member_index], self.members,
                                    network.send_frame, self._relay_receivers, self._senders_per_edge)
        """Carries the DONE of this member's senders that no frame can carry (see done_relay)."""

    def build(self) -> list:
        """Processor tasklets, then the receivers and senders of the distributed edges: those of
        one edge in one group per cooperative thread (see :mod:`jet.execution.tasklet_group`)."""
        tasklets = super().build()
        relay = [RelayCompletionTasklet(self.done_relay)] if self.senders and self.done_relay.is_relay_member else []
        return (tasklets + self._edge_groups("receivers", self.receivers)
                + self._edge_groups("senders", self.senders) + relay)

    def _edge_groups(self, kind: str, tasklets: dict[tuple[int, int, int, int], Any]) -> list:
        per_edge: dict[tuple[int, int], list] = {}
        for (_, vertex_id, ordinal, _), tasklet in tasklets.items():
            per_edge.setdefault((vertex_id, ordinal), []).append(tasklet)
        return [group for edge, edge_tasklets in per_edge.items()
                for group in grouped(f"{kind}({self._edge_names[edge]})", edge_tasklets, self.cooperative_threads)]

    def _wire_edge(self, edge: Edge, instreams: dict, collectors: dict) -> None:
        if not edge.is_distributed() or not self.remote_members:
            super()._wire_edge(edge, instreams, collectors)
            return
        config = edge.config or self.edge_defaults
        capacity = UNBOUNDED if edge.is_buffered() else config.queue_size
        source, dest = edge.source.name, edge.dest.name
        upstream, downstream = self.local_parallelism[source], self.local_parallelism[dest]
        local = {(i, j): SpscQueue(capacity, name=f"{source}#{i}->{dest}#{j}")
                 for i in range(upstream) for j in range(downstream)}
        self.queues[f"{source}->{dest}"] = local
        vertex_id, ordinal = self.vertex_ids[dest], edge.dest_ordinal
        receiver_queues = {m: [SpscQueue(capacity, name=f"member{m}->{dest}#{j}")
                               for j in range(downstream)] for m in self.remote_members}
        for j in range(downstream):
            conveyor = [local[(i, j)] for i in range(upstream)]
            conveyor += [receiver_queues[m][j] for m in self.remote_members]
            instreams[dest][j].append(self._instream(edge, conveyor, f"{source}->{dest}#{j}"))
        for m in self.remote_members:
            key = (self.execution_id, vertex_id, ordinal, m)
            self.receivers[key] = ReceiverTasklet(
                f"receiver({source}->{dest}, from member {m})",
                self._receiver_collector(edge, receiver_queues[m], downstream),
                ReceiveWindow(config.receive_window_multiplier, self.period_ns),
                partitions_of_items=self._receiver_partitions(edge, downstream))
            self._relay_receivers[(vertex_id, ordinal, m)] = self.receivers[key]
        self._senders_per_edge[(vertex_id, ordinal)] = len(self.remote_members)
        self._edge_names[(vertex_id, ordinal)] = f"{source}->{dest}"
        relay = self.done_relay
        sender_queues = {m: [SpscQueue(capacity, name=f"{source}#{i}->member{m}")
                             for i in range(upstream)] for m in self.remote_members}
        for m in self.remote_members:
            self.senders[(self.execution_id, vertex_id, ordinal, m)] = SenderTasklet(
                f"sender({source}->{dest}, to member {m})",
                InboundEdgeStream(ordinal, 0, sender_queues[m], name=f"{source}->member{m}",
                                  wait_for_all_barriers=self.wait_for_all_barriers),
                self._frame_sender(m), self.execution_id, vertex_id, ordinal,
                config.packet_size_limit, pairs=self._sends_partitions(edge, downstream),
                on_finished=functools.partial(relay.sender_finished, (vertex_id, ordinal), m))
        for i in range(upstream):
            local_leaves = [local[(i, j)] for j in range(downstream)]
            remote_leaves = [sender_queues[m][i] for m in self.remote_members]
            collectors[source][i][edge.source_ordinal] = self._upstream_collector(
                edge, local_leaves, remote_leaves, downstream)

    def _frame_sender(self, member: int):
        send = self.network.send_frame
        return lambda frame: send(member, frame)

    def _owner_member_index(self, position: int) -> int:
        """Index of the sender to the member at ``position`` among the leaves after the local ones."""
        return self._remote_leaf[position]

    def _upstream_collector(self, edge: Edge, local_leaves: list, remote_leaves: list,
                            downstream: int) -> OutboundCollector:
        policy = edge.routing_policy
        if policy is RoutingPolicy.BROADCAST:
            return BroadcastCollector([CollectorLeaf(BroadcastCollector(local_leaves))] + remote_leaves)
        if policy is not RoutingPolicy.PARTITIONED:
            return RoundRobinCollector([CollectorLeaf(RoundRobinCollector(local_leaves))] + remote_leaves)
        topology = self.topology
        owned = owned_partition_table(topology.partition_owners, topology.member_index, downstream)
        remote_from = len(local_leaves)
        table = [owned[p] if topology.partition_owners[p] == topology.member_index
                 else remote_from + self._owner_member_index(topology.partition_owners[p])
                 for p in range(PARTITION_COUNT)]
        leaves = local_leaves + remote_leaves
        if edge.all_to_one_key is not None:
            return SingleTargetCollector(leaves, table[murmur_partition(edge.all_to_one_key)])
        if isinstance(edge.partitioner, HashPartitioner):
            raise ValueError(f"edge {edge!r}: a distributed edge needs a stable partitioner")
        return DistributedPartitionedCollector(leaves, edge.key_fn, edge.partitioner, table, remote_from,
                                               remote_pairs=self._sends_partitions(edge, downstream))

    @staticmethod
    def _sends_partitions(edge: Edge, downstream: int) -> bool:
        """Whether items cross with their partition ids: only when the other member has several
        processors to route them to. Every member runs the vertex with the same local
        parallelism as a rule (this member's ``downstream``); a receiver with several processors
        hashes the items of a sender that guessed otherwise (:meth:`_receiver_partitions`)."""
        return edge.routing_policy is RoutingPolicy.PARTITIONED and edge.all_to_one_key is None and downstream > 1

    @staticmethod
    def _receiver_partitions(edge: Edge, downstream: int):
        """For a receiver that routes by partition: the partitions of items that came without."""
        if not DistributedExecutionPlan._sends_partitions(edge, downstream):
            return None
        partitions_of, key_fn = chunk_partitions_fn(edge.partitioner, distributed=True), edge.key_fn
        return lambda items: partitions_of(items if key_fn is whole_item else list(map(key_fn, items)))

    def _receiver_collector(self, edge: Edge, leaves: list, downstream: int) -> OutboundCollector:
        policy = edge.routing_policy
        if policy is RoutingPolicy.BROADCAST:
            return BroadcastCollector(leaves)
        if policy is not RoutingPolicy.PARTITIONED:
            return RoundRobinCollector(leaves)
        topology = self.topology
        owned = owned_partition_table(topology.partition_owners, topology.member_index, downstream)
        if edge.all_to_one_key is not None:
            return SingleTargetCollector(leaves, owned.get(murmur_partition(edge.all_to_one_key), 0))
        if downstream == 1:
            return SingleTargetCollector(leaves, 0)
        return PartitionIdCollector(leaves, owned)
