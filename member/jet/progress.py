"""Live progress of a running job: a table on a terminal, periodic log lines otherwise.

Per vertex: items in and out and the rate of items emitted; for a stream (or once any vertex
has a watermark) also the watermark lag (wall clock minus the coalesced watermark, in ms; a
source's last forwarded one; blank when none) and the late events dropped. Under the table, the
latest items of the job's result sinks (``Sinks.observable``, or ``Sinks.list`` when it can be
read while the job runs), when the caller gives a way to read them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from jet.execution.vertex_metrics import (EMITTED, LATE_EVENTS_DROPPED, RECEIVED, emitted_rate, now_ms,
                                          progress_line, watermark_lag_ms)

Metrics = dict[str, dict[str, int]]
ResultsFn = Callable[[], Mapping[str, list]]
log = logging.getLogger("jet.progress")

#: Latest result items shown per sink under the live table.
SHOWN_LATEST_RESULTS = 5


def _has_stream_figures(metrics: Metrics) -> bool:
    """Whether any vertex has a watermark or dropped late events (then it is a stream)."""
    return any(watermark_lag_ms(figures, 0) is not None or figures.get(LATE_EVENTS_DROPPED, 0)
               for figures in metrics.values())


def metrics_table(metrics: Metrics, elapsed_s: float, previous: Metrics | None = None,
                  interval_s: float = 1.0, title: str = "job", streaming: bool = False,
                  wall_ms: int | None = None) -> Table:
    """Items in and out per vertex and the output rate since ``previous`` (the average over the
    run without it: the summary); for a stream, the watermark lag and late events too."""
    wall_ms = now_ms() if wall_ms is None else wall_ms
    stream_columns = streaming or _has_stream_figures(metrics)
    table = Table(title=f"{title}  [{elapsed_s:6.1f} s]", title_justify="left")
    table.add_column("vertex")
    table.add_column("items in", justify="right")
    table.add_column("items out", justify="right")
    table.add_column("out/s", justify="right")
    if stream_columns:
        table.add_column("wm lag ms", justify="right")
        table.add_column("late", justify="right")
    for vertex, figures in metrics.items():
        if previous is None:
            rate = figures.get(EMITTED, 0) / elapsed_s if elapsed_s > 0 else 0.0
        else:
            rate = emitted_rate(figures, previous.get(vertex), interval_s)
        row = [vertex, f"{figures.get(RECEIVED, 0):,}", f"{figures.get(EMITTED, 0):,}", f"{rate:,.0f}"]
        if stream_columns:
            lag = watermark_lag_ms(figures, wall_ms)
            row += ["" if lag is None else f"{lag:,}", f"{figures.get(LATE_EVENTS_DROPPED, 0):,}"]
        table.add_row(*row)
    return table


def latest_results_table(results: Mapping[str, list], shown: int = SHOWN_LATEST_RESULTS) -> Table | None:
    """The last ``shown`` items of each result sink, newest last; None when there are none."""
    if not any(results.values()):
        return None
    table = Table(title="latest results", title_justify="left", show_header=False)
    table.add_column("sink")
    table.add_column("item")
    for name, items in results.items():
        for item in list(items[-shown:]):
            table.add_row(name, repr(item))
    return table


def metrics_line(metrics: Metrics, elapsed_s: float, previous: Metrics | None = None,
                 interval_s: float = 1.0, wall_ms: int | None = None) -> str:
    """The progress of every vertex in one log line."""
    wall_ms = now_ms() if wall_ms is None else wall_ms
    # The first line (no previous sample) counts from nothing: its rate is over the first interval.
    parts = [progress_line(vertex, figures, emitted_rate(figures, (previous or {}).get(vertex, {}), interval_s),
                           wall_ms)
             for vertex, figures in metrics.items()]
    return f"[{elapsed_s:.1f} s] " + "; ".join(parts)


class ProgressDisplay:
    """Polls ``metrics_fn`` (and ``results_fn``, when given) in a thread while the job runs;
    ``stop()`` prints a summary. On a terminal a live table, else a log line every
    ``interval_s`` (5 s by default)."""

    def __init__(self, metrics_fn: Callable[[], Metrics], title: str = "job",
                 console: Console | None = None, interval_s: float | None = None,
                 results_fn: ResultsFn | None = None, streaming: bool = False,
                 counted_since_fn: Callable[[], float | None] | None = None) -> None:
        """``counted_since_fn``: how many seconds the final figures cover, when not the whole
        display's time (a job that restarted counts from its last execution's start)."""
        self._metrics_fn = metrics_fn
        self._counted_since_fn = counted_since_fn
        self._results_fn = results_fn
        self._title = title
        self._streaming = streaming
        self._console = console or Console(stderr=True)
        self._interactive = self._console.is_terminal
        self._interval_s = interval_s or (0.5 if self._interactive else 5.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jet.progress", daemon=True)
        self._started = time.monotonic()

    def __enter__(self) -> "ProgressDisplay":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _sample(self) -> Metrics:
        try:
            return self._metrics_fn()
        except Exception as error:  # noqa: BLE001 - progress must never break the job
            log.debug("progress metrics unavailable: %s", error)
            return {}

    def _latest_results(self) -> Mapping[str, list]:
        if self._results_fn is None:
            return {}
        try:
            return self._results_fn()
        except Exception as error:  # noqa: BLE001 - progress must never break the job
            log.debug("results unavailable: %s", error)
            return {}

    def _view(self, metrics: Metrics, previous: Metrics | None) -> Any:
        table = metrics_table(metrics, self.elapsed_s, previous, self._interval_s, self._title, self._streaming)
        results = latest_results_table(self._latest_results())
        return table if results is None else Group(table, results)

    def _run(self) -> None:
        previous: Metrics | None = None
        if self._interactive:
            with Live(console=self._console, refresh_per_second=4, transient=True) as live:
                while not self._stop.wait(self._interval_s):
                    metrics = self._sample()
                    live.update(self._view(metrics, previous))
                    previous = metrics
        else:
            while not self._stop.wait(self._interval_s):
                metrics = self._sample()
                log.info("progress %s", metrics_line(metrics, self.elapsed_s, previous, self._interval_s))
                previous = metrics

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def stop(self) -> Metrics:
        """Stop polling and print the summary table; return the final metrics."""
        if self._stop.is_set():
            return {}
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        metrics = self._sample()
        self._console.print(metrics_table(metrics, self._counted_s(), title=f"{self._title}: summary",
                                          streaming=self._streaming))
        return metrics

    def _counted_s(self) -> float:
        """The seconds the final figures cover: the last execution's, else the whole display's."""
        try:
            since = self._counted_since_fn() if self._counted_since_fn is not None else None
        except Exception as error:  # noqa: BLE001 - progress must never break the job
            log.debug("execution start unavailable: %s", error)
            since = None
        return self.elapsed_s if since is None else min(self.elapsed_s, since)
