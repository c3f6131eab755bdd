"""The latest items of a running job's observable sinks, for ``jet run``'s live table.

One daemon thread per ``Sinks.observable(name)`` follows ``job.observable(name)`` and keeps its
newest items; the iterator ends with the job (or raises its failure, which the run reports by
itself), and so does the thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

from jet.core.dag import DAG

log = logging.getLogger("jet.run")

#: Newest items kept per observable (the table shows a few of them).
KEPT_ITEMS = 20


def observable_names(dag: DAG) -> list[str]:
    """The names of a DAG's observable sinks (their suppliers carry ``observable_name``)."""
    names = (getattr(vertex.processor_supplier, "observable_name", None) for vertex in dag.vertices)
    return sorted({name for name in names if isinstance(name, str)})


class LatestResults:
    """Follows the observables ``names`` of ``job`` (a client's ``Job``) while in a ``with``."""

    def __init__(self, job: Any, names: list[str], kept: int = KEPT_ITEMS) -> None:
        self._job = job
        self._latest: dict[str, deque] = {name: deque(maxlen=kept) for name in names}
        self._threads = [threading.Thread(target=self._follow, args=(name,), daemon=True,
                                          name=f"jet.observable-{name}") for name in names]

    def __enter__(self) -> "LatestResults":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """The threads end with the job; nothing waits for them here."""

    def _follow(self, name: str) -> None:
        latest = self._latest[name]
        try:
            for item in self._job.observable(name):
                latest.append(item)
        except Exception as error:  # noqa: BLE001 - the job's own end is reported by the run
            log.debug("observable %r of job %s ended: %s", name, getattr(self._job, "id", "?"), error)

    def items(self) -> dict[str, list]:
        """The newest items of each observable so far, oldest first."""
        return {name: list(latest) for name, latest in self._latest.items()}
