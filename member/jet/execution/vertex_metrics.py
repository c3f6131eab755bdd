"""Execution metrics per processor and per vertex, with Jet's metric names.

Each processor tasklet counts what it received and emitted (``items_in``/``items_out``), the
inbox fills that brought items (``received_batches``), per outbound ordinal the items emitted
and the time its queues (or a distributed edge's send window, through the sender's queue) were
full (``emitted_per_ordinal``, ``back_pressured_ns``), and keeps its watermarks
(``top_observed_wm``, ``coalesced_wm``, ``last_forwarded_wm``) and the key count of its last
snapshot (``snapshot_keys``; the bytes are counted by the snapshot writer,
``SnapshotContext.saved_bytes``); windowing processors count the late events they dropped
(``late_events_dropped``). They are plain ints written by the one thread that runs the tasklet,
so they are read here without locks: a reader may see a value one step old, never a torn one.
The queue figures are read from the inbound queues at the time of reading.

A vertex's figures (what ``jet run``'s table and ``Job.metrics()`` show) merge its processors',
on one member and then across members (:func:`merge_vertex_metrics`):

=========================== ======================= ===========================================
key                         merged by               meaning
=========================== ======================= ===========================================
``in`` (receivedCount)      sum                     items received
``out`` (emittedCount)      sum                     items emitted
``receivedBatches``         sum                     inbox fills that brought items
``queuesSize``              sum                     items waiting in the inbound queues
``queuesCapacity``          sum                     their capacity (unbounded queues count 0)
``snapshotBytes``           sum                     bytes of the processors' last snapshot part
``snapshotKeys``            sum                     entries of it
``backPressuredTimeMs``     sum                     ms an outbound queue or send window was full
``distributedBytesOut``     sum                     bytes sent on the vertex's distributed edges
``distributedItemsOut``     sum                     items sent on them
``distributedBytesIn``      sum                     bytes received on distributed edges into it
``distributedItemsIn``      sum                     items received on them
``topObservedWm``           max                     highest watermark seen on any input
``coalescedWm``             min                     the watermark the processors act on
``lastForwardedWm``         min                     the last watermark sent downstream
``lastForwardedWmLatency``  max                     wall clock minus ``lastForwardedWm`` (ms)
``lateEventsDropped``       sum                     events dropped behind the watermark
=========================== ======================= ===========================================

A watermark that is not there yet is ``MIN_TIMESTAMP``, as in Jet; so is a latency that cannot
be told (no watermark forwarded yet). The distributed figures come from the senders and receivers
(:mod:`jet.cluster.edges.edge_metrics`); a vertex without distributed edges has none.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP
from jet.execution.queues import UNBOUNDED

RECEIVED = "in"
EMITTED = "out"
TOP_OBSERVED_WM = "topObservedWm"
COALESCED_WM = "coalescedWm"
LAST_FORWARDED_WM = "lastForwardedWm"
LAST_FORWARDED_WM_LATENCY = "lastForwardedWmLatency"
LATE_EVENTS_DROPPED = "lateEventsDropped"
RECEIVED_BATCHES = "receivedBatches"
QUEUES_SIZE = "queuesSize"
QUEUES_CAPACITY = "queuesCapacity"
SNAPSHOT_BYTES = "snapshotBytes"
SNAPSHOT_KEYS = "snapshotKeys"
BACK_PRESSURED_TIME_MS = "backPressuredTimeMs"
DISTRIBUTED_BYTES_OUT = "distributedBytesOut"
DISTRIBUTED_ITEMS_OUT = "distributedItemsOut"
DISTRIBUTED_BYTES_IN = "distributedBytesIn"
DISTRIBUTED_ITEMS_IN = "distributedItemsIn"

#: Jet's name of each key (the Prometheus metric is ``jet_vertex_<Jet name>``).
JET_NAMES = {
    RECEIVED: "receivedCount",
    EMITTED: "emittedCount",
    TOP_OBSERVED_WM: TOP_OBSERVED_WM,
    COALESCED_WM: COALESCED_WM,
    LAST_FORWARDED_WM: LAST_FORWARDED_WM,
    LAST_FORWARDED_WM_LATENCY: LAST_FORWARDED_WM_LATENCY,
    LATE_EVENTS_DROPPED: LATE_EVENTS_DROPPED,
    RECEIVED_BATCHES: RECEIVED_BATCHES,
    QUEUES_SIZE: QUEUES_SIZE,
    QUEUES_CAPACITY: QUEUES_CAPACITY,
    SNAPSHOT_BYTES: SNAPSHOT_BYTES,
    SNAPSHOT_KEYS: SNAPSHOT_KEYS,
    BACK_PRESSURED_TIME_MS: BACK_PRESSURED_TIME_MS,
}
"""Per processor: the key of each figure and its Jet name."""

_SUM_KEYS = (RECEIVED, EMITTED, LATE_EVENTS_DROPPED, RECEIVED_BATCHES, QUEUES_SIZE, QUEUES_CAPACITY,
             SNAPSHOT_BYTES, SNAPSHOT_KEYS, BACK_PRESSURED_TIME_MS, DISTRIBUTED_BYTES_OUT,
             DISTRIBUTED_ITEMS_OUT, DISTRIBUTED_BYTES_IN, DISTRIBUTED_ITEMS_IN)
_MAX_KEYS = (TOP_OBSERVED_WM, LAST_FORWARDED_WM_LATENCY)
_MIN_KEYS = (COALESCED_WM, LAST_FORWARDED_WM)

Metrics = dict[str, int]
"""One processor's or one vertex's figures, by the keys above."""


def now_ms() -> int:
    """Wall clock in epoch milliseconds (event time's clock)."""
    return time.time_ns() // 1_000_000


def is_watermark(value: int | None) -> bool:
    """Whether ``value`` is a real watermark (not the "none yet" or idle sentinels)."""
    return value is not None and MIN_TIMESTAMP < value < MAX_TIMESTAMP


def processor_metrics(tasklet: Any, wall_ms: int) -> Metrics:
    """The figures of one processor tasklet, read without locks."""
    forwarded = getattr(tasklet, "last_forwarded_wm", MIN_TIMESTAMP)
    latency = getattr(tasklet, "last_forwarded_wm_latency", None)
    if latency is None:
        latency = wall_ms - forwarded if is_watermark(forwarded) else MIN_TIMESTAMP
    queues = getattr(tasklet, "inbound_queues", ())
    return {
        RECEIVED: tasklet.items_in,
        EMITTED: tasklet.items_out,
        TOP_OBSERVED_WM: getattr(tasklet, "top_observed_wm", MIN_TIMESTAMP),
        COALESCED_WM: getattr(tasklet, "coalesced_wm", MIN_TIMESTAMP),
        LAST_FORWARDED_WM: forwarded,
        LAST_FORWARDED_WM_LATENCY: latency,
        LATE_EVENTS_DROPPED: getattr(tasklet.processor, "late_events_dropped", 0),
        RECEIVED_BATCHES: getattr(tasklet, "received_batches", 0),
        QUEUES_SIZE: sum(queue.size() for queue in queues),
        QUEUES_CAPACITY: sum(queue.capacity for queue in queues if queue.capacity != UNBOUNDED),
        SNAPSHOT_BYTES: getattr(tasklet, "snapshot_bytes", 0),
        SNAPSHOT_KEYS: getattr(tasklet, "snapshot_keys", 0),
        BACK_PRESSURED_TIME_MS: sum(back_pressured_ms(tasklet, ordinal)
                                    for ordinal in range(len(getattr(tasklet, "back_pressured_ns", ())))),
    }


def back_pressured_ms(tasklet: Any, ordinal: int) -> int:
    """Milliseconds the tasklet's outbound ``ordinal`` was held back, the stretch going on included."""
    total = tasklet.back_pressured_ns[ordinal]
    since = tasklet.blocked_since[ordinal]
    if since:
        total += max(0, time.perf_counter_ns() - since)
    return total // 1_000_000


def merge_into(total: Metrics, figures: Mapping[str, int]) -> Metrics:
    """Add one processor's (or one member's vertex) ``figures`` into ``total``; returns it.

    An empty ``total`` takes the figures as they are; keys ``figures`` lacks (a report from an
    older member) leave ``total`` as it was."""
    if not total:
        total.update(figures)
        return total
    for key in _SUM_KEYS:
        if key in figures:
            total[key] = total.get(key, 0) + figures[key]
    for key in _MAX_KEYS:
        if key in figures:
            total[key] = max(total.get(key, MIN_TIMESTAMP), figures[key])
    for key in _MIN_KEYS:
        if key in figures:
            total[key] = min(total.get(key, MAX_TIMESTAMP), figures[key])
    return total


def vertex_metrics(tasklets: Iterable[Any], wall_ms: int | None = None,
                   extra: Iterable[tuple[str, Mapping[str, int]]] = ()) -> dict[str, Metrics]:
    """Each vertex's figures over its processor tasklets on this member, plus ``extra`` figures
    by vertex (the distributed edges')."""
    wall_ms = now_ms() if wall_ms is None else wall_ms
    metrics: dict[str, Metrics] = {}
    for tasklet in tasklets:
        merge_into(metrics.setdefault(tasklet.context.vertex_name, {}), processor_metrics(tasklet, wall_ms))
    for vertex, figures in extra:
        total = metrics.setdefault(vertex, {})
        for key, value in figures.items():
            total[key] = total.get(key, 0) + value
    return metrics


def merge_vertex_metrics(per_member: Iterable[Mapping[str, Mapping[str, int]]]) -> dict[str, Metrics]:
    """Each vertex's figures over members (each member's as :func:`vertex_metrics` gives them)."""
    total: dict[str, Metrics] = {}
    for metrics in per_member:
        for vertex, figures in metrics.items():
            merge_into(total.setdefault(vertex, {}), figures)
    return total


def watermark_lag_ms(figures: Mapping[str, int], wall_ms: int) -> int | None:
    """Wall clock minus the vertex's coalesced watermark (its last forwarded one for a source,
    which has no input to coalesce), in ms; None when it has no watermark."""
    for key in (COALESCED_WM, LAST_FORWARDED_WM):
        value = figures.get(key)
        if is_watermark(value):
            return wall_ms - value
    return None


def emitted_rate(figures: Mapping[str, int], previous: Mapping[str, int] | None, interval_s: float) -> float:
    """Items emitted per second since ``previous`` (0 without a previous sample)."""
    if previous is None or interval_s <= 0:
        return 0.0
    return max(0, figures.get(EMITTED, 0) - previous.get(EMITTED, 0)) / interval_s


def progress_line(vertex: str, figures: Mapping[str, int], rate: float, wall_ms: int) -> str:
    """One vertex's progress in one line: counts, rate, watermark lag and late events."""
    lag = watermark_lag_ms(figures, wall_ms)
    return (f"{vertex}: in={figures.get(RECEIVED, 0):,} out={figures.get(EMITTED, 0):,} rate={rate:,.0f}/s"
            f" wm_lag={'-' if lag is None else f'{lag:,} ms'} late={figures.get(LATE_EVENTS_DROPPED, 0):,}")
