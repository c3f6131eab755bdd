"""Observable results (``Sinks.observable(name)`` and ``job.observable(name)``) across the cluster.

::

    sink processor on member m --publish(name, items)--> member m's publisher
        member 0: straight into the coordinator's ObservableStore
        member m > 0: control message ``observable_items`` (items pickled) to member 0
    client --``observable_read`` (from sequence s, long poll)--> member 0 --> items, next s

Member 0 keeps a ring buffer per (job, observable): its ``capacity`` newest items, numbered
from 0. Every reader keeps its own position, so several clients can follow one observable; a
reader that falls more than ``capacity`` items behind loses the oldest (as Jet's ringbuffer-
backed observables do) and is told how many. The sink publishes synchronously before it
completes, so when the job has COMPLETED everything is in the buffer; a reader's iterator ends
once it has read all of it, or raises the job's error when the job failed or was cancelled.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from itertools import islice
from typing import Any, Callable, Iterator

from jet.cluster.links.errors import NotFoundError

log = logging.getLogger("jet.cluster.executions.observables")

DEFAULT_OBSERVABLE_CAPACITY = 10_000
"""Items member 0 keeps per observable (Jet's default ringbuffer capacity)."""
READ_MAX_ITEMS = 4096
"""Most items one read returns."""
READ_WAIT_S = 1.0
"""How long one read waits on member 0 for new items (a long poll)."""
POLL_PAUSE_S = 1.0
"""How long a client pauses before it asks again when member 0 answered a waiting call (a read,
a ``job_wait``) without waiting, every waiting slot being taken."""

Publisher = Callable[[str, int, list], None]
"""``publish(observable name, capacity, items)`` on one member, for one job."""


class UnknownObservableError(NotFoundError):
    """The job has no observable sink of that name."""


def observable_names(dag: Any) -> list[str]:
    """The names of a DAG's observable sinks (their suppliers carry ``observable_name``)."""
    names = (getattr(vertex.processor_supplier, "observable_name", None) for vertex in dag.vertices)
    return sorted({name for name in names if isinstance(name, str)})


class ObservableBuffer:
    """The newest ``capacity`` items of one observable, numbered from 0 since the job started."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: deque = deque(maxlen=capacity)
        self.head = 0
        """The sequence number of the oldest item kept."""

    @property
    def tail(self) -> int:
        """The sequence number the next item will get."""
        return self.head + len(self._items)

    def append(self, items: list) -> None:
        tail = self.tail + len(items)
        self._items.extend(items)
        self.head = tail - len(self._items)

    def read(self, from_sequence: int, max_items: int) -> tuple[list, int, int]:
        """``(items, next sequence, items lost)``: from ``from_sequence`` on, or from the oldest
        kept item when the ones before it were overwritten."""
        start = max(from_sequence, self.head)
        offset = start - self.head
        items = list(islice(self._items, offset, offset + max_items))
        return items, start + len(items), start - from_sequence


class ObservableStore:
    """Member 0's buffers, per job and observable name; readers wait on it for new items."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._jobs: dict[str, dict[str, ObservableBuffer]] = {}

    def publish(self, job_id: str, name: str, capacity: int, items: list) -> None:
        with self._changed:
            buffers = self._jobs.setdefault(job_id, {})
            buffer = buffers.get(name)
            if buffer is None:
                buffer = buffers[name] = ObservableBuffer(capacity)
            buffer.append(items)
            self._changed.notify_all()

    def read(self, job_id: str, name: str, from_sequence: int, max_items: int, wait_s: float,
             job_ended: Callable[[], bool]) -> tuple[list, int, int, bool]:
        """``(items, next sequence, lost, ended)``, waiting up to ``wait_s`` for an item.

        ``ended``: the job had ended before this read and the reader has now read everything."""
        deadline = time.monotonic() + wait_s
        with self._changed:
            while True:
                ended = job_ended()
                buffer = self._jobs.get(job_id, {}).get(name)
                tail = 0 if buffer is None else buffer.tail
                if tail > from_sequence:
                    items, next_sequence, lost = buffer.read(from_sequence, max_items)
                    return items, next_sequence, lost, ended and next_sequence >= tail
                remaining = deadline - time.monotonic()
                if ended or remaining <= 0:
                    return [], from_sequence, 0, ended
                self._changed.wait(remaining)

    def wake(self) -> None:
        """A job ended: readers waiting for items look again."""
        with self._changed:
            self._changed.notify_all()

    def forget(self, job_id: str) -> None:
        with self._changed:
            self._jobs.pop(job_id, None)


_publishers: dict[tuple[str, int], Publisher] = {}
_publishers_lock = threading.Lock()


def register_publisher(job_id: str, member_index: int, publisher: Publisher) -> None:
    """Where the observable sinks of ``job_id`` on member ``member_index`` (of this process) send
    their items. A job execution registers it before its processors start."""
    with _publishers_lock:
        _publishers[(job_id, member_index)] = publisher


def unregister_publisher(job_id: str, member_index: int, publisher: Publisher) -> None:
    """Remove ``publisher`` (not one a later execution of the job registered since)."""
    with _publishers_lock:
        if _publishers.get((job_id, member_index)) is publisher:
            del _publishers[(job_id, member_index)]


def publisher_for(job_id: str, member_index: int) -> Publisher:
    """The publisher of a job's execution on a member; a clear error when there is none."""
    with _publishers_lock:
        publisher = _publishers.get((job_id, member_index))
    if publisher is None:
        raise RuntimeError(f"Sinks.observable: job {job_id!r} on member {member_index} has nowhere to publish; "
                           f"observables need a cluster (jet.local_cluster or jet.connect) or a publisher "
                           f"registered with jet.cluster.executions.observables.register_publisher")
    return publisher


ReadCall = Callable[[int], tuple[dict[str, Any], list]]
"""``read(from_sequence) -> (reply header, items)``: one ``observable_read`` of member 0."""


class ObservableIterator(Iterator[Any]):
    """The items of one observable as they come; ends when the job has ended and all was read.

    A failed or cancelled job ends the iteration with its error (``JobFailedError`` or
    ``JobCancelledError``) after the items that arrived before. ``lost`` counts the items that
    were overwritten on member 0 before this reader got to them."""

    def __init__(self, read: ReadCall, name: str, failure: Callable[[dict[str, Any]], BaseException],
                 first: tuple[dict[str, Any], list] | None = None) -> None:
        self.name = name
        self.lost = 0
        self._read = read
        self._failure = failure
        self._next_sequence = 0
        self._batch: deque = deque()
        self._ended = False
        self._end_error: BaseException | None = None
        if first is not None:
            self._take(*first)

    def __iter__(self) -> "ObservableIterator":
        return self

    def __next__(self) -> Any:
        batch = self._batch
        while not batch:
            if self._ended:
                error, self._end_error = self._end_error, None
                if error is not None:
                    raise error
                raise StopIteration
            header, items = self._read(self._next_sequence)
            self._take(header, items)
            if not items and header.get("waited") is False:  # no waiting slot was free on member 0
                time.sleep(POLL_PAUSE_S)
        return batch.popleft()

    def _take(self, header: dict[str, Any], items: list) -> None:
        """Keep a read's items and position; note the end and the job's error."""
        self._next_sequence = header["next"]
        if header.get("lost"):
            self.lost += header["lost"]
            log.warning("observable %r: %d items were overwritten on member 0 before they were read "
                        "(read faster, or give Sinks.observable a larger capacity)", self.name, header["lost"])
        self._batch.extend(items)
        if header.get("ended"):
            self._ended = True
            job = header.get("job") or {}
            if job.get("status") == "FAILED":
                self._end_error = self._failure(job)
