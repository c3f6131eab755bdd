"""The execution metrics of a member's running jobs, for its ``/metrics``.

Every scrape reads the tasklets of the executions on this member at that moment (no lock: see
:mod:`jet.execution.vertex_metrics`) and exports each measurement of
:mod:`jet.execution.measurements` and :mod:`jet.cluster.edges.edge_metrics` as a gauge.

Per processor, ``jet_vertex_<Jet name>`` with the labels ``job`` (the job's id), ``job_name``,
``execution``, ``vertex``, ``processor`` (the processor's index among the vertex's processors on
this member) and ``member``:

- ``jet_vertex_receivedCount``, ``jet_vertex_emittedCount``, ``jet_vertex_receivedBatches``:
  items received and emitted, inbox fills that brought items;
- ``jet_vertex_queuesSize``, ``jet_vertex_queuesCapacity``: items waiting in the processor's
  inbound queues and their capacity (unbounded queues count 0);
- ``jet_vertex_topObservedWm``, ``jet_vertex_coalescedWm``, ``jet_vertex_lastForwardedWm``:
  watermarks in epoch ms (``-9223372036854775808``, Jet's ``Long.MIN_VALUE``, when none yet);
- ``jet_vertex_lastForwardedWmLatency``: wall clock minus ``lastForwardedWm`` in ms;
- ``jet_vertex_lateEventsDropped``: events a windowing or stateful processor dropped as late;
- ``jet_vertex_snapshotBytes``, ``jet_vertex_snapshotKeys``: the processor's part of the last
  snapshot it saved;
- ``jet_vertex_backPressuredTimeMs``: ms its outbound queues (or send windows) were full, summed
  over its outputs.

Per outbound ordinal of a processor, ``jet_edge_emittedCount`` and ``jet_edge_backPressuredTimeMs``
(``rate(jet_edge_backPressuredTimeMs[1m])`` is Flink's backPressuredTimeMsPerSecond), with the
labels above plus ``ordinal`` and ``to_vertex``. Per distributed edge and remote member,
``jet_edge_distributed{Bytes,Packets,Items}{Out,In}`` and ``jet_edge_receiveWindow`` with the
labels ``job, job_name, execution, vertex, ordinal, to_vertex, member, remote_member``.

They are gauges, not counters: a job's counts start again from 0 with each execution.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from jet.cluster.edges.edge_metrics import RECEIVER_METRICS, SENDER_METRICS, execution_measurements
from jet.execution.measurements import DISTRIBUTED_TAGS, ORDINAL_METRICS, ORDINAL_TAGS, PROCESSOR_TAGS
from jet.execution.vertex_metrics import JET_NAMES, now_ms

VERTEX_PREFIX = "jet_vertex_"
EDGE_PREFIX = "jet_edge_"
_HELP = {
    "receivedCount": "Items the processor received",
    "emittedCount": "Items the processor emitted",
    "topObservedWm": "Highest watermark observed on any input (epoch ms)",
    "coalescedWm": "Watermark coalesced over the inputs, what the processor acts on (epoch ms)",
    "lastForwardedWm": "Last watermark the processor forwarded (epoch ms)",
    "lastForwardedWmLatency": "Wall clock minus the last forwarded watermark (ms)",
    "lateEventsDropped": "Events dropped because they came behind the watermark",
    "receivedBatches": "Inbox fills that brought items",
    "queuesSize": "Items waiting in the processor's inbound queues",
    "queuesCapacity": "Total capacity of the processor's bounded inbound queues",
    "snapshotBytes": "Bytes of the processor's part of the last snapshot",
    "snapshotKeys": "Entries of the processor's part of the last snapshot",
    "backPressuredTimeMs": "Milliseconds an outbound queue or send window was full",
    "distributedBytesOut": "Bytes sent on the distributed edge to the remote member",
    "distributedPacketsOut": "Packets sent on the distributed edge to the remote member",
    "distributedItemsOut": "Items sent on the distributed edge to the remote member",
    "distributedBytesIn": "Bytes received on the distributed edge from the remote member",
    "distributedPacketsIn": "Packets received on the distributed edge from the remote member",
    "distributedItemsIn": "Items received on the distributed edge from the remote member",
    "receiveWindow": "Receive window last granted to the remote sender (units of 64 KiB)",
}
#: Every family this collector exports, with its labels.
FAMILIES: dict[str, tuple[str, ...]] = {
    **{VERTEX_PREFIX + name: PROCESSOR_TAGS for name in JET_NAMES.values()},
    **{EDGE_PREFIX + name: ORDINAL_TAGS for name in ORDINAL_METRICS},
    **{EDGE_PREFIX + name: DISTRIBUTED_TAGS for name in SENDER_METRICS + RECEIVER_METRICS},
}


def family_of(item: dict) -> str:
    """The Prometheus family of a measurement."""
    return (EDGE_PREFIX if "ordinal" in item["tags"] else VERTEX_PREFIX) + item["metric"]


class VertexMetricsCollector(Collector):
    """A Prometheus collector over the executions ``executions()`` returns at each scrape
    (objects with ``job_id``, ``execution_id``, ``member_index``, ``message.job_name`` and ``plan``)."""

    def __init__(self, executions: Callable[[], Iterable[Any]]) -> None:
        self._executions = executions

    def describe(self) -> list:
        return []  # unknown until scraped: keeps registration from calling collect()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {name: GaugeMetricFamily(name, _HELP[name[name.index("_", 4) + 1:]], labels=labels)
                    for name, labels in FAMILIES.items()}
        wall_ms = now_ms()
        for execution in list(self._executions()):
            for item in execution_measurements(execution, wall_ms):
                name = family_of(item)
                tags = item["tags"]
                families[name].add_metric([tags[label] for label in FAMILIES[name]], item["value"])
        yield from families.values()
