"""The metrics of a member's part of an execution, distributed edges included.

A :class:`~jet.cluster.distributed_plan.DistributedExecutionPlan` keeps its senders and receivers
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

from jet.execution.measurements import (Measurement, PackedMeasurements, add_remote, execution_tags, pack_measurements,
                                        processor_measurements, remote_group, unpack_measurements)
from jet.execution.vertex_metrics import (DISTRIBUTED_BYTES_IN, DISTRIBUTED_BYTES_OUT, DISTRIBUTED_ITEMS_IN,
                                          DISTRIBUTED_ITEMS_OUT, Metrics, now_ms, vertex_metrics)

DISTRIBUTED_PACKETS_OUT = "distributedPacketsOut"
DISTRIBUTED_PACKETS_IN = "distributedPacketsIn"
RECEIVE_WINDOW = "receiveWindow"
SENDER_METRICS = (DISTRIBUTED_BYTES_OUT, DISTRIBUTED_PACKETS_OUT, DISTRIBUTED_ITEMS_OUT)
RECEIVER_METRICS = (DISTRIBUTED_BYTES_IN, DISTRIBUTED_PACKETS_IN, DISTRIBUTED_ITEMS_IN, RECEIVE_WINDOW)


def _edge_of(plan: Any, key: tuple[int, int, int, int]) -> tuple[str, int, str, int]:
    """(producer, its outbound ordinal, consumer, remote member) of a sender's or receiver's key."""
    _, vertex_id, dest_ordinal, remote = key
    dest = plan.order[vertex_id].name
    for edge in plan.dag.edges:
        if edge.dest.name == dest and edge.dest_ordinal == dest_ordinal:
            return edge.source.name, edge.source_ordinal, dest, remote
    raise KeyError(f"no edge into ordinal {dest_ordinal} of vertex {dest!r}")


def sender_figures(sender: Any) -> dict[str, int]:
    return {DISTRIBUTED_BYTES_OUT: sender.bytes_sent, DISTRIBUTED_PACKETS_OUT: sender.packets_sent,
            DISTRIBUTED_ITEMS_OUT: sender.items_sent}


def receiver_figures(receiver: Any) -> dict[str, int]:
    return {DISTRIBUTED_BYTES_IN: receiver.bytes_received, DISTRIBUTED_PACKETS_IN: receiver.packets_received,
            DISTRIBUTED_ITEMS_IN: receiver.items_received, RECEIVE_WINDOW: receiver.window.window_compressed}


def _distributed(plan: Any) -> Iterator[tuple[tuple[str, int, str, int], bool, dict[str, int]]]:
    """Per sender and receiver of ``plan``: its edge, whether it sends, and its figures."""
    for key, sender in list(getattr(plan, "senders", {}).items()):
        yield _edge_of(plan, key), True, sender_figures(sender)
    for key, receiver in list(getattr(plan, "receivers", {}).items()):
        yield _edge_of(plan, key), False, receiver_figures(receiver)


def plan_figures(plan: Any, wall_ms: int | None = None) -> dict[str, Metrics]:
    """Each vertex's figures on this member: its processors' and its distributed edges' items
    and bytes (``Out`` on the producer, ``In`` on the consumer)."""
    extra = []
    for (source, _, dest, _), sends, figures in _distributed(plan):
        if sends:
            extra.append((source, {DISTRIBUTED_BYTES_OUT: figures[DISTRIBUTED_BYTES_OUT],
                                   DISTRIBUTED_ITEMS_OUT: figures[DISTRIBUTED_ITEMS_OUT]}))
        else:
            extra.append((dest, {DISTRIBUTED_BYTES_IN: figures[DISTRIBUTED_BYTES_IN],
                                 DISTRIBUTED_ITEMS_IN: figures[DISTRIBUTED_ITEMS_IN]}))
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
    group_key = None
    for (source, ordinal, dest, remote), _, figures in _distributed(plan):
        key = (source, ordinal, dest, tuple(figures))
        if key != group_key:  # a plan keeps an edge's senders (and receivers) together
            group_key = key
            groups.append(remote_group({**base, "vertex": source, "ordinal": str(ordinal), "to_vertex": dest},
                                       figures))
        add_remote(groups[-1], remote, figures.values())
    if groups:
        packed["remote"] = groups
    return packed
