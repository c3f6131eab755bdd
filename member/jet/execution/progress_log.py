"""A running streaming job's progress in the member's log: a line per vertex every few seconds.

A stream has no end to wait for, so a member logs, for each vertex of its part of the job, the
items in and out, the rate of items emitted since the last line, the watermark lag and the late
events dropped (``MemberSettings.progress_log_interval_ms``, 10 s by default; 0 turns it off).
This is what ``kubectl logs`` of a streaming JetJob's member shows.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Mapping

from jet.execution.vertex_metrics import emitted_rate, now_ms, progress_line

log = logging.getLogger("jet.progress")

STREAMING_ATTRIBUTE = "is_streaming"
"""The mark the planner puts on the DAG of a job that reads a stream source."""
DEFAULT_PROGRESS_LOG_INTERVAL_MS = 10_000


def is_streaming(dag: Any) -> bool:
    """Whether ``dag`` is marked as a streaming job (``dag.is_streaming``)."""
    return bool(getattr(dag, STREAMING_ATTRIBUTE, False))


class ProgressLog:
    """Logs ``metrics()`` (vertex -> figures) every ``interval_ms`` on a daemon thread, each
    line led by ``label``, until :meth:`stop`."""

    def __init__(self, label: str, metrics: Callable[[], Mapping[str, Mapping[str, int]]],
                 interval_ms: int) -> None:
        self._label = label
        self._metrics = metrics
        self._interval_s = interval_ms / 1000
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"jet.progress-{label}", daemon=True)

    def start(self) -> "ProgressLog":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        # ``metrics`` is usually a bound method of the execution that owns this log: keeping it
        # would make a cycle, and the ended execution (its processors, results, queues) would
        # wait for a full collection instead of going when its member drops it.
        self._metrics = _no_metrics

    def _run(self) -> None:
        previous: Mapping[str, Mapping[str, int]] = {}
        while not self._stopped.wait(self._interval_s):
            try:
                metrics = self._metrics()
            except Exception as error:  # noqa: BLE001 - progress must never break the job
                log.debug("%s: no metrics: %s", self._label, error)
                continue
            wall_ms = now_ms()
            for vertex, figures in metrics.items():
                rate = emitted_rate(figures, previous.get(vertex, {}), self._interval_s)
                log.info("%s progress %s", self._label, progress_line(vertex, figures, rate, wall_ms))
            previous = metrics


def _no_metrics() -> Mapping[str, Mapping[str, int]]:
    return {}
