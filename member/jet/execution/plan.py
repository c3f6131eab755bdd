"""The execution plan of one job on one member: processors, queues, collectors, tasklets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from jet.core.dag import DAG, DagValidationError, Vertex
from jet.core.edge import Edge, EdgeConfig, RoutingPolicy
from jet.core.partitioner import PARTITION_COUNT, murmur_partition
from jet.core.processor import Context, Processor
from jet.execution.inbound import InboundEdgeStream
from jet.execution.outbound import (BroadcastCollector, OutboundCollector, PartitionedCollector,
                                    RoundRobinCollector, SingleTargetCollector)
from jet.execution.processor_tasklet import ProcessorTasklet
from jet.execution.queues import UNBOUNDED, SpscQueue
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_portions import grouping_partition_fn
from jet.execution.vertex_metrics import vertex_metrics
from jet.job_config import ProcessingGuarantee


@dataclass(frozen=True)
class MemberTopology:
    """Where this member stands in the cluster, and who owns which partition."""

    member_index: int = 0
    member_count: int = 1
    partition_owners: Sequence[int] = field(default_factory=lambda: (0,) * PARTITION_COUNT)


def local_partition_table(local_parallelism: int) -> list[int]:
    """Partition -> local processor on a local edge: processor i gets {p : p % LP == i}."""
    return [p % local_parallelism for p in range(PARTITION_COUNT)]


def owned_partition_table(owners: Sequence[int], member_index: int,
                          local_parallelism: int) -> dict[int, int]:
    """This member's partitions (ascending) dealt round-robin to its processors."""
    own = [p for p in range(PARTITION_COUNT) if owners[p] == member_index]
    return {p: k % local_parallelism for k, p in enumerate(own)}


def isolated_pairs(upstream: int, downstream: int) -> list[tuple[int, int]]:
    """The (upstream, downstream) processor pairs an isolated edge connects."""
    if upstream == downstream:
        return [(i, i) for i in range(upstream)]
    if downstream > upstream:
        return [(j % upstream, j) for j in range(downstream)]
    return [(i, i % downstream) for i in range(upstream)]


class ExecutionPlan:
    """Builds the tasklets that run ``dag`` on one member.

    Per edge there is one conveyor per downstream processor holding one queue per upstream
    processor it is connected to, and per upstream processor one collector over its queues.
    """

    def __init__(self, dag: DAG, *, cooperative_threads: int = 1,
                 edge_defaults: EdgeConfig | None = None,
                 topology: MemberTopology | None = None, job_id: str = "local",
                 snapshot_context: SnapshotContext | None = None,
                 restore_entries: dict[tuple[str, int], list] | None = None,
                 metrics_enabled: bool = True) -> None:
        """``snapshot_context``: the execution takes snapshots (its guarantee is not NONE).
        ``restore_entries``: per (vertex, local index) the snapshot entries its processor
        restores before anything else (see :mod:`jet.execution.snapshot_restore`).
        ``metrics_enabled=False``: the tasklets skip the counting only metrics need."""
        self.dag = dag
        self.cooperative_threads = cooperative_threads
        self.edge_defaults = edge_defaults or EdgeConfig()
        self.topology = topology or MemberTopology()
        self.job_id = job_id
        self.order: list[Vertex] = dag.validate()
        self.local_parallelism = {v.name: v.determine_local_parallelism(cooperative_threads)
                                  for v in self.order}
        self.queues: dict[str, dict[tuple[int, int], SpscQueue]] = {}
        """Per edge (named "source->dest") the queue of each (upstream, downstream) pair."""
        self.results: dict[str, list] = {}
        """Named results the job's sinks collect on this member (see Context.results)."""
        self.tasklets: list[ProcessorTasklet] = []
        self.snapshot_context = snapshot_context
        self.guarantee = snapshot_context.guarantee if snapshot_context else ProcessingGuarantee.NONE
        self.restore_entries = restore_entries
        self.metrics_enabled = metrics_enabled

    def build(self) -> list[ProcessorTasklet]:
        """Create every processor and wire the queues; nothing runs yet."""
        processors = {v.name: [self._create_processor(v, i)
                               for i in range(self.local_parallelism[v.name])] for v in self.order}
        instreams: dict[str, list[list[InboundEdgeStream]]] = {
            name: [[] for _ in procs] for name, procs in processors.items()}
        collectors: dict[str, list[list[Any]]] = {}
        capacities: dict[str, list[int]] = {}
        for vertex in self.order:
            outbound = self.dag.outbound_edges(vertex.name)
            collectors[vertex.name] = [[None] * len(outbound) for _ in processors[vertex.name]]
            capacities[vertex.name] = [(e.config or self.edge_defaults).outbox_capacity
                                       for e in outbound]
        for edge in self.dag.edges:
            self._wire_edge(edge, instreams, collectors)
        tasklets = []
        for vertex in self.order:
            to_vertices = [e.dest.name for e in self.dag.outbound_edges(vertex.name)]
            partition_of = grouping_partition_fn(self.dag, vertex) if self.snapshot_context else None
            for index, processor in enumerate(processors[vertex.name]):
                restore = (None if self.restore_entries is None
                           else self.restore_entries.get((vertex.name, index), []))
                tasklet = ProcessorTasklet(
                    f"{vertex.name}#{index}", processor, self._context(vertex, index),
                    instreams[vertex.name][index], collectors[vertex.name][index],
                    capacities[vertex.name], self.snapshot_context, restore, metrics_enabled=self.metrics_enabled,
                    snapshot_partition=partition_of)
                tasklet.to_vertices = list(to_vertices)
                tasklets.append(tasklet)
        self.tasklets = tasklets
        return tasklets

    def vertex_metrics(self) -> dict[str, dict[str, int]]:
        """Each vertex's figures on this member so far: items in and out, watermarks, late
        events dropped (see :mod:`jet.execution.vertex_metrics`)."""
        return vertex_metrics(self.tasklets)

    def _context(self, vertex: Vertex, local_index: int) -> Context:
        topology = self.topology
        return Context(vertex_name=vertex.name, local_index=local_index,
                       local_parallelism=self.local_parallelism[vertex.name],
                       member_index=topology.member_index, member_count=topology.member_count,
                       job_id=self.job_id, cooperative_threads=self.cooperative_threads,
                       results=self.results, processing_guarantee=self.guarantee)

    def _create_processor(self, vertex: Vertex, index: int) -> Processor:
        processor = vertex.processor_supplier()
        if not isinstance(processor, Processor):
            raise DagValidationError(
                f"vertex {vertex.name!r}: its processor supplier returned"
                f" {type(processor).__name__}, expected a jet.core.Processor")
        return processor

    def _wire_edge(self, edge: Edge, instreams: dict, collectors: dict) -> None:
        config = edge.config or self.edge_defaults
        capacity = UNBOUNDED if edge.is_buffered() else config.queue_size
        source, dest = edge.source.name, edge.dest.name
        upstream, downstream = self.local_parallelism[source], self.local_parallelism[dest]
        if edge.routing_policy is RoutingPolicy.ISOLATED:
            pairs = isolated_pairs(upstream, downstream)
        else:
            pairs = [(i, j) for i in range(upstream) for j in range(downstream)]
        queues = {(i, j): SpscQueue(capacity, name=f"{source}#{i}->{dest}#{j}") for i, j in pairs}
        self.queues[f"{source}->{dest}"] = queues
        for j in range(downstream):
            conveyor = [queues[(i, j)] for i in range(upstream) if (i, j) in queues]
            instreams[dest][j].append(self._instream(edge, conveyor, f"{source}->{dest}#{j}"))
        for i in range(upstream):
            targets = [j for j in range(downstream) if (i, j) in queues]
            leaves = [queues[(i, j)] for j in targets]
            collectors[source][i][edge.source_ordinal] = self._collector(edge, leaves, downstream)

    @property
    def wait_for_all_barriers(self) -> bool:
        """Whether inputs align snapshot barriers (exactly-once)."""
        return self.guarantee is ProcessingGuarantee.EXACTLY_ONCE

    def _instream(self, edge: Edge, conveyor: list[SpscQueue], name: str) -> InboundEdgeStream:
        return InboundEdgeStream(edge.dest_ordinal, edge.get_priority(), conveyor, name=name,
                                 wait_for_all_barriers=self.wait_for_all_barriers)

    def _collector(self, edge: Edge, leaves: list[SpscQueue], downstream: int) -> OutboundCollector:
        policy = edge.routing_policy
        if policy is RoutingPolicy.BROADCAST:
            return BroadcastCollector(leaves)
        if policy is not RoutingPolicy.PARTITIONED:
            return RoundRobinCollector(leaves)
        table = self._partition_table(edge, downstream)
        if edge.all_to_one_key is not None:
            return SingleTargetCollector(leaves, table[murmur_partition(edge.all_to_one_key)])
        return PartitionedCollector(leaves, edge.key_fn, edge.partitioner, table)

    def _partition_table(self, edge: Edge, downstream: int) -> list[int]:
        if not edge.is_distributed():
            return local_partition_table(downstream)
        topology = self.topology
        owned = owned_partition_table(topology.partition_owners, topology.member_index, downstream)
        if len(owned) != PARTITION_COUNT:
            raise NotImplementedError("distributed edges across members need the cluster layer")
        return [owned[p] for p in range(PARTITION_COUNT)]
