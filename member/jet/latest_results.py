"""The latest items of a running job's observable sinks, for ``jet run``'s live table.

On members, one daemon thread per ``Sinks.observable(name)`` follows ``job.observable(name)``
and keeps its newest items; the iterator ends with the job (or raises its failure, which the run
reports by itself), and so does the thread. In this process (``--members 1``) the observable
sinks publish straight here: :meth:`LatestResults.publish_for` registers this as the job's
publisher.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict, deque
from contextlib import contextmanager
from typing import Any, Iterator

from jet.cluster.executions.observables import observable_names, register_publisher, unregister_publisher

log = logging.getLogger("jet.run")

#: Newest items kept per observable (the table shows a few of them).
KEPT_ITEMS = 20

__all__ = ["KEPT_ITEMS", "LatestResults", "observable_names"]


class LatestResults:
    """The newest items of each observable sink of one job."""

    def __init__(self, kept: int = KEPT_ITEMS) -> None:
        self._latest: defaultdict[str, deque] = defaultdict(lambda: deque(maxlen=kept))

    def publish(self, name: str, capacity: int, items: list) -> None:
        """What an in-process observable sink calls with each batch (a ``Publisher``)."""
        self._latest[name].extend(items)

    @contextmanager
    def publish_for(self, job_id: str, member_index: int = 0) -> Iterator["LatestResults"]:
        """Be the publisher of the observable sinks of ``job_id`` in this process meanwhile."""
        publisher = self.publish  # one bound method: unregistering compares it by identity
        register_publisher(job_id, member_index, publisher)
        try:
            yield self
        finally:
            unregister_publisher(job_id, member_index, publisher)

    def follow(self, job: Any, names: list[str]) -> "LatestResults":
        """Follow the observables ``names`` of a cluster's ``job`` on daemon threads."""
        for name in names:
            threading.Thread(target=self._follow, args=(job, name), daemon=True,
                             name=f"jet.observable-{name}").start()
        return self

    def _follow(self, job: Any, name: str) -> None:
        latest = self._latest[name]
        try:
            for item in job.observable(name):
                latest.append(item)
        except Exception as error:  # noqa: BLE001 - the job's own end is reported by the run
            log.debug("observable %r of job %s ended: %s", name, getattr(job, "id", "?"), error)

    def items(self) -> dict[str, list]:
        """The newest items of each observable so far, oldest first."""
        return {name: list(latest) for name, latest in list(self._latest.items())}
