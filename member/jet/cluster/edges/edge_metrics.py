"""The metrics of a member's part of an execution, distributed edges included.

A :class:`~jet.cluster.edges.distributed_plan.DistributedExecutionPlan` keeps its senders and receivers
by ``(execution, destination vertex id, destination ordinal, remote member)``; each is one
(distributed edge, remote member). Their counters are plain ints written by the tasklet that
owns them (a receiver's arrived bytes by the network thread), read here without locks:

- sender side: ``distributedBytesOut``, ``distributedPacketsOut``, ``distributedItemsOut``;
- receiver side: ``distributedBytesIn``, ``distributedPacketsIn``, ``distributedItemsIn`` and
  ``receiveWindow``, the window the receiver last granted in compressed units of 64 KiB.

Both sides tag the edge alike: ``vertex`` is the producer, ``ordinal`` its outbound ordinal,
``to_vertex`` the consumer, ``member`` this member and ``remote_member`` the other end. In a
vertex's merged figures the ``Out`` counts go to the producer and the ``In`` counts to the consumer.
"""

from __future__ import annotations

from typing import Any, Iterator

from jet.execution.measurements import (
    Measurement,
    PackedMeasurements,
    execution_tags,
    pack_measurements,
    processor_measurements,
    remote_group,
    unpack_measurements,
)
from jet.execution.vertex_metrics import (
    DISTRIBUTED_BYTES_IN,
    DISTRIBUTED_BYTES_OUT,
    DISTRIBUTED_ITEMS_IN,
    DISTRIBUTED_ITEMS_OUT,
    Metrics,
    now_ms,
    vertex_metrics,
)

DISTRIBUTED_PACKETS_OUT = "distributedPacketsOut"
DISTRIBUTED_PACKETS_IN = "distributedPacketsIn"
RECEIVE_WINDOW = "receiveWindow"
SENDER_METRICS = (DISTRIBUTED_BYTES_OUT, DISTRIBUTED_PACKETS_OUT, DISTRIBUTED_ITEMS_OUT)
RECEIVER_METRICS = (DISTRIBUTED_BYTES_IN, DISTRIBUTED_PACKETS_IN, DISTRIBUTED_ITEMS_IN, RECEIVE_WINDOW)


EdgeNames = tuple[str, int, str]
"""(producer, its outbound ordinal, consumer) of a distributed edge."""


def _edges_by_destination(plan: Any) -> dict[tuple[int, int], EdgeNames]:
    """Each edge of ``plan``'s DAG by (destination vertex id, destination ordinal), the middle
    of a sender's or receiver's key."""
    ids = {vertex.name: i for i, vertex in enumerate(plan.order)}
    return {(ids[edge.dest.name], edge.dest_ordinal): (edge.source.name, edge.source_ordinal, edge.dest.name)
            for edge in plan.dag.edges}


def _edge_sides(plan: Any) -> Iterator[tuple[EdgeNames, bool, list[tuple[int, Any]]]]:
    """Per distributed edge of ``plan``, its senders and then its receivers: the edge, whether
    they send, and ``(remote member, tasklet)`` for each. Per edge, not per tasklet: a report
    reads every one of them at each job's end, and there are 2(k - 1) per edge."""
    senders, receivers = getattr(plan, "senders", {}), getattr(plan, "receivers", {})
    if not senders and not receivers:
        return
    edges = _edges_by_destination(plan)
    for tasklets, sends in ((senders, True), (receivers, False)):
        sides: dict[tuple[int, int], list[tuple[int, Any]]] = {}
        for (_, vertex_id, ordinal, remote), tasklet in list(tasklets.items()):
            sides.setdefault((vertex_id, ordinal), []).append((remote, tasklet))
        for key, members in sides.items():
            yield edges[key], sends, members


def sender_values(sender: Any) -> list[int]:
    """A sender's figures, in the order of :data:`SENDER_METRICS`."""
    return [sender.bytes_sent, sender.packets_sent, sender.items_sent]


def receiver_values(receiver: Any) -> list[int]:
    """A receiver's figures, in the order of :data:`RECEIVER_METRICS`."""
    return [receiver.bytes_received, receiver.packets_received, receiver.items_received,
            receiver.window.window_compressed]


def plan_figures(plan: Any, wall_ms: int | None = None) -> dict[str, Metrics]:
    """Each vertex's figures on this member: its processors' and its distributed edges' items
    and bytes (``Out`` on the producer, ``In`` on the consumer)."""
    extra = []
    for (source, _, dest), sends, members in _edge_sides(plan):
        if sends:
            extra.append((source, {DISTRIBUTED_BYTES_OUT: sum(s.bytes_sent for _, s in members),
                                   DISTRIBUTED_ITEMS_OUT: sum(s.items_sent for _, s in members)}))
        else:
            extra.append((dest, {DISTRIBUTED_BYTES_IN: sum(r.bytes_received for _, r in members),
                                 DISTRIBUTED_ITEMS_IN: sum(r.items_received for _, r in members)}))
    return vertex_metrics(plan.tasklets, wall_ms, extra)


def execution_measurements(execution: Any, wall_ms: int | None = None) -> list[Measurement]:
    """Every measurement of one member's execution (an object with ``job_id``, ``execution_id``,
    ``member_index``, ``message.job_name`` and ``plan``)."""
    return unpack_measurements(packed_execution_measurements(execution, wall_ms))


def packed_execution_measurements(execution: Any, wall_ms: int | None = None) -> PackedMeasurements:
    """:func:`execution_measurements` packed, each distributed edge's figures as one ``remote``
    group (a tag set and the metrics' names once, then the values per remote member), so what
    grows with the member count is a few numbers per remote member."""
    base = execution_tags(execution.job_id, getattr(execution.message, "job_name", ""),
                          getattr(execution, "execution_id", ""), execution.member_index)
    plan = execution.plan
    packed = pack_measurements(processor_measurements(list(plan.tasklets), base,
                                                      now_ms() if wall_ms is None else wall_ms))
    groups: list[dict] = []
    for (source, ordinal, dest), sends, members in _edge_sides(plan):
        metrics, values = (SENDER_METRICS, sender_values) if sends else (RECEIVER_METRICS, receiver_values)
        group = remote_group({**base, "vertex": source, "ordinal": str(ordinal), "to_vertex": dest}, metrics)
        group["members"] = [str(remote) for remote, _ in members]
        group["values"] = [values(tasklet) for _, tasklet in members]
        groups.append(group)
    if groups:
        packed["remote"] = groups
    return packed
