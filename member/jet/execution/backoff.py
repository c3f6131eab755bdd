"""Exponential idle backoff for worker threads (Jet's BackoffIdleStrategy, parks only)."""

from __future__ import annotations

import threading
import time
from time import monotonic_ns
from typing import Callable, Protocol

#: Jet 0.5's cooperative pool: 1 us doubling to a 1 ms cap (2, 4, ... 512 us, then 1 ms).
DEFAULT_MIN_PARK_NS = 1_000
DEFAULT_MAX_PARK_NS = 1_000_000


class BackoffIdleStrategy:
    """After the n-th idle pass in a row (n >= 1), park ``min(min_park << n, max_park)`` ns."""

    def __init__(self, min_park_ns: int = DEFAULT_MIN_PARK_NS,
                 max_park_ns: int = DEFAULT_MAX_PARK_NS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if min_park_ns < 1 or max_park_ns < min_park_ns:
            raise ValueError(f"need 1 <= min_park_ns <= max_park_ns, got {min_park_ns}, {max_park_ns}")
        self.min_park_ns = min_park_ns
        self.max_park_ns = max_park_ns
        self._sleep = sleep

    def park_ns(self, idle_count: int) -> int:
        """How long the ``idle_count``-th consecutive idle pass parks."""
        if idle_count <= 0:
            return 0
        shift = min(idle_count, 62)
        return min(self.min_park_ns << shift, self.max_park_ns)

    def idle(self, idle_count: int, sleep: Callable[[float], None] | None = None) -> int:
        """Park for the ``idle_count``-th idle pass (with ``sleep`` if given, such as a
        :class:`WakeablePause`); return the nanoseconds asked for."""
        park = self.park_ns(idle_count)
        if park:
            (sleep or self._sleep)(park / 1e9)
        return park


#: How long a cooperative thread parks when none of its tasklets needs polling: a safety net only,
#: since whatever gives such a thread work wakes it (:func:`wake_parked_workers`).
DEFAULT_LONG_PARK_S = 1.0


class Parkable(Protocol):
    """A thread that can park until woken (a cooperative worker)."""

    def wake(self) -> None: ...


parked_workers: set[Parkable] = set()
"""The cooperative threads parked on their wake-up signal now (any service in this process)."""
pausing_threads: set[Parkable] = set()
"""The threads in a backoff pause now (:class:`WakeablePause`)."""


def register_parked(worker: Parkable) -> None:
    """``worker`` is about to park on its wake-up signal (it makes one more pass first)."""
    parked_workers.add(worker)


def unregister_parked(worker: Parkable) -> None:
    parked_workers.discard(worker)


def wake_parked_workers() -> None:
    """Anything that may give an idle tasklet work calls this after handing the work over:
    a frame for a receiver, an ack for a sender, items in a local queue, a cancel, a snapshot
    commit. Costs two truth tests when no thread is parked or pausing."""
    if parked_workers:
        _wake_parked()
    if pausing_threads:
        for thread in list(pausing_threads):
            thread.wake()


def _wake_parked() -> None:
    for worker in list(parked_workers):
        worker.wake()


#: Backoff pauses from this long on can be cut short by a wake-up; shorter ones only sleep.
WAKEABLE_FROM_S = 100e-6


class WakeablePause:
    """A backoff pause that work cuts short: while it lasts it is among the pausing threads, so
    whatever hands its thread work (:func:`wake_parked_workers`) ends it at once. A pause that
    only slept left a frame, or a window's results, waiting for the rest of it (up to the 1 ms
    cap): a receiver's watermark on a cooperative thread, a sink on a non-cooperative one. The
    :class:`ProgressWaker` leaves pauses alone: it wakes no more often than a pause ends anyway,
    and its wake-ups only made pausing threads contend for the GIL twice as often. A pause
    shorter than :data:`WAKEABLE_FROM_S` only sleeps: waiting on an event costs 3-6 us more CPU
    than a sleep, and the short pauses are most of a busy stream's (8 of about 10 per
    millisecond) while a wake-up could save at most their length."""

    __slots__ = ("_event",)

    def __init__(self, event: threading.Event | None = None) -> None:
        """``event``: the thread's own wake-up signal, if it has one (it is cleared here)."""
        self._event = event if event is not None else threading.Event()

    def wake(self) -> None:
        self._event.set()

    def __call__(self, seconds: float) -> None:
        if seconds < WAKEABLE_FROM_S:
            time.sleep(seconds)
            return
        event = self._event
        event.clear()
        pausing_threads.add(self)
        event.wait(seconds)
        pausing_threads.discard(self)


def wants_polling(tasklet: object) -> bool:
    """Whether ``tasklet`` must be called again without being woken (time-driven, polled for
    external data, or blocked on something that signals nobody). Tasklets without a
    ``wants_polling()`` method are polled."""
    method = getattr(tasklet, "wants_polling", None)
    return True if method is None else bool(method())


class ProgressWaker:
    """Wakes the parked threads (not the pausing ones) after a pass of this thread made progress
    (it may have filled a queue another thread's tasklet reads), at most once per ``interval_ns``
    while it keeps making progress, and once more when it goes idle if a wake-up was skipped: a
    busy thread wakes a parked one no more often than the backoff cap would have polled it, and
    never leaves an item unseen."""

    __slots__ = ("interval_ns", "_last_ns", "_owed")

    def __init__(self, interval_ns: int = DEFAULT_MAX_PARK_NS) -> None:
        self.interval_ns = interval_ns
        self._last_ns = 0
        self._owed = False

    def on_progress(self) -> None:
        if not parked_workers:
            return
        now = monotonic_ns()
        if now - self._last_ns >= self.interval_ns:
            self._last_ns = now
            self._owed = False
            _wake_parked()
        else:
            self._owed = True

    def on_idle(self) -> None:
        if self._owed:
            self._owed = False
            if parked_workers:
                _wake_parked()
