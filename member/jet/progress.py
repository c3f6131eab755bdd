"""Live progress of a running job: a table on a terminal, periodic log lines otherwise."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

Metrics = dict[str, dict[str, int]]
log = logging.getLogger("jet.progress")


def metrics_table(metrics: Metrics, elapsed_s: float, previous: Metrics | None = None,
                  interval_s: float = 1.0, title: str = "job") -> Table:
    """Items in and out per vertex, the output rate since ``previous``, and the elapsed time."""
    table = Table(title=f"{title}  [{elapsed_s:6.1f} s]", title_justify="left")
    table.add_column("vertex")
    table.add_column("items in", justify="right")
    table.add_column("items out", justify="right")
    table.add_column("out/s", justify="right")
    for vertex, counts in metrics.items():
        if previous is None:  # the summary: the average rate over the whole run
            rate = counts["out"] / elapsed_s if elapsed_s > 0 else 0.0
        else:
            rate = (counts["out"] - previous.get(vertex, {"out": 0})["out"]) / interval_s
        table.add_row(vertex, f"{counts['in']:,}", f"{counts['out']:,}", f"{rate:,.0f}")
    return table


def metrics_line(metrics: Metrics, elapsed_s: float) -> str:
    parts = [f"{vertex} in={c['in']:,} out={c['out']:,}" for vertex, c in metrics.items()]
    return f"[{elapsed_s:.1f} s] " + "; ".join(parts)


class ProgressDisplay:
    """Polls ``metrics_fn`` in a thread while the job runs; ``stop()`` prints a summary."""

    def __init__(self, metrics_fn: Callable[[], Metrics], title: str = "job",
                 console: Console | None = None, interval_s: float | None = None) -> None:
        self._metrics_fn = metrics_fn
        self._title = title
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

    def _run(self) -> None:
        previous: Metrics | None = None
        if self._interactive:
            with Live(console=self._console, refresh_per_second=4, transient=True) as live:
                while not self._stop.wait(self._interval_s):
                    metrics = self._sample()
                    live.update(metrics_table(metrics, self.elapsed_s, previous, self._interval_s,
                                              self._title))
                    previous = metrics
        else:
            while not self._stop.wait(self._interval_s):
                log.info("progress %s", metrics_line(self._sample(), self.elapsed_s))

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
        self._console.print(metrics_table(metrics, self.elapsed_s, title=f"{self._title}: summary"))
        return metrics
