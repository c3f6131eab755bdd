"""The per-processor execution metrics of a member's running jobs, for its ``/metrics``.

Every scrape reads the processor tasklets of the executions on this member at that moment (no
lock: see :mod:`jet.execution.vertex_metrics`) and exports one gauge per Jet metric, named
``jet_vertex_<Jet name>`` with the labels ``job`` (the job's id), ``job_name``, ``vertex``,
``processor`` (the processor's index among the vertex's processors on this member) and
``member``:

- ``jet_vertex_receivedCount``, ``jet_vertex_emittedCount``: items received and emitted;
- ``jet_vertex_topObservedWm``, ``jet_vertex_coalescedWm``, ``jet_vertex_lastForwardedWm``:
  watermarks in epoch ms (``-9223372036854775808``, Jet's ``Long.MIN_VALUE``, when none yet);
- ``jet_vertex_lastForwardedWmLatency``: wall clock minus ``lastForwardedWm`` in ms;
- ``jet_vertex_lateEventsDropped``: events a windowing or stateful processor dropped as late.

They are gauges, not counters: a job's counts start again from 0 when it runs again.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from jet.execution.vertex_metrics import JET_NAMES, now_ms, processor_metrics

METRIC_PREFIX = "jet_vertex_"
LABELS = ("job", "job_name", "vertex", "processor", "member")
_HELP = {
    "receivedCount": "Items the processor received",
    "emittedCount": "Items the processor emitted",
    "topObservedWm": "Highest watermark observed on any input (epoch ms)",
    "coalescedWm": "Watermark coalesced over the inputs, what the processor acts on (epoch ms)",
    "lastForwardedWm": "Last watermark the processor forwarded (epoch ms)",
    "lastForwardedWmLatency": "Wall clock minus the last forwarded watermark (ms)",
    "lateEventsDropped": "Events dropped because they came behind the watermark",
}


class VertexMetricsCollector(Collector):
    """A Prometheus collector over the executions ``executions()`` returns at each scrape
    (objects with ``job_id``, ``member_index``, ``message.job_name`` and ``plan.tasklets``)."""

    def __init__(self, executions: Callable[[], Iterable[Any]]) -> None:
        self._executions = executions

    def describe(self) -> list:
        return []  # unknown until scraped: keeps registration from calling collect()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {key: GaugeMetricFamily(METRIC_PREFIX + name, _HELP[name], labels=LABELS)
                    for key, name in JET_NAMES.items()}
        wall_ms = now_ms()
        for execution in list(self._executions()):
            job_name = getattr(execution.message, "job_name", "")
            for tasklet in list(execution.plan.tasklets):
                context = tasklet.context
                labels = [execution.job_id, job_name, context.vertex_name, str(context.local_index),
                          str(execution.member_index)]
                for key, value in processor_metrics(tasklet, wall_ms).items():
                    families[key].add_metric(labels, value)
        yield from families.values()
