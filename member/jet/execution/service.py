"""TaskletExecutionService: cooperative worker threads, work stealing, dedicated threads.

Cooperative tasklets are dealt round-robin (one index shared by all jobs) to a fixed pool of
worker threads; each worker calls its tasklets in turn. A worker whose whole pass made no
progress parks with exponential backoff. When a worker drops a finished tasklet it looks for
the worker with the most tasklets; if that one has at least two more, it marks one of them,
and the owner hands the marked tasklet over when it next reaches it, without calling it.
So a tasklet never runs on two threads at once. Non-cooperative tasklets get a thread each.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from typing import Sequence

from jet.execution.backoff import (DEFAULT_LONG_PARK_S, BackoffIdleStrategy, ProgressWaker, WakeablePause,
                                   register_parked, unregister_parked, wake_parked_workers, wants_polling)
from jet.execution.job_future import ExecutionFuture
from jet.execution.tasklet import DONE_BIT, Tasklet

log = logging.getLogger("jet.execution")
_steal_lock = threading.Lock()


class TaskletTracker:
    """A tasklet with its job and, while it is being stolen, the worker that asked for it."""

    __slots__ = ("tasklet", "future", "tasklet_id", "stealing_worker", "initialized")

    def __init__(self, tasklet: Tasklet, future: ExecutionFuture, tasklet_id: int) -> None:
        self.tasklet = tasklet
        self.future = future
        self.tasklet_id = tasklet_id
        self.stealing_worker: CooperativeWorker | None = None
        self.initialized = False


def _run_once(tracker: TaskletTracker) -> int | None:
    """Call the tasklet once (initialising it first); None means it failed and was dropped."""
    try:
        if not tracker.initialized:
            tracker.initialized = True
            tracker.tasklet.init()
        return tracker.tasklet.call()
    except BaseException as error:  # noqa: BLE001 - any error fails the job, never the worker
        tracker.future.tasklet_failed(tracker.tasklet_id, error)
        _close(tracker)
        return None


def _close(tracker: TaskletTracker) -> None:
    try:
        tracker.tasklet.close()
    except Exception:  # noqa: BLE001
        log.exception("closing tasklet %s failed", tracker.tasklet.name)


def _drop(tracker: TaskletTracker) -> None:
    _close(tracker)
    tracker.future.tasklet_done(tracker.tasklet_id)


SHUTDOWN_REASON = "stopped because the member shut down"


def _abandon(tracker: TaskletTracker) -> None:
    """The service shuts down under a running tasklet: its job is cancelled, never completed."""
    tracker.future.cancel(SHUTDOWN_REASON)
    _drop(tracker)


class CooperativeWorker:
    """One cooperative thread and the tasklets it owns (only this thread changes the list)."""

    def __init__(self, service: "TaskletExecutionService", index: int,
                 idle_strategy: BackoffIdleStrategy, long_park_s: float = DEFAULT_LONG_PARK_S) -> None:
        self.index = index
        self.trackers: list[TaskletTracker] = []
        self.incoming: deque[tuple[TaskletTracker, bool]] = deque()
        self.stolen_count = 0
        """Tasklets this worker took over from another worker."""
        self.given_count = 0
        """Tasklets this worker handed to a thief."""
        self.idle_passes = 0
        self.last_park_ns = 0
        self.long_parks = 0
        """Parks on the wake-up signal (no tasklet here needed polling)."""
        self.is_parking = False
        self._long_park_s = long_park_s
        self._service = service
        self._idle = idle_strategy
        self._wakeup = threading.Event()
        self.pause = WakeablePause(self._wakeup)
        """Its backoff pause, among the pausing threads while it lasts."""
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"jet.cooperative.thread-{index}")

    def add(self, tracker: TaskletTracker, stolen: bool = False) -> None:
        """Any thread: queue a tasklet for this worker to adopt."""
        self.incoming.append((tracker, stolen))
        self._wakeup.set()

    def wake(self) -> None:
        self._wakeup.set()

    def _adopt(self) -> None:
        adopted = []
        while self.incoming:
            tracker, stolen = self.incoming.popleft()
            adopted.append(tracker)
            if stolen:
                self.stolen_count += 1
        self.trackers = self.trackers + adopted

    def _run(self) -> None:
        idle_count = 0
        waker = ProgressWaker(self._idle.max_park_ns)
        service = self._service
        while not service.is_shut_down:
            if self.incoming:
                self._adopt()
            if not self.trackers:
                self._wakeup.wait()
                self._wakeup.clear()
                continue
            if self._pass(self.trackers):
                idle_count = 0
                if self.is_parking:
                    self._end_park()
                waker.on_progress()
            else:
                waker.on_idle()
                idle_count += 1
                self.idle_passes += 1
                if self._needs_polling(self.trackers):
                    if self.is_parking:  # a tasklet wants polling again: no long park
                        self._end_park()
                    self.last_park_ns = self._idle.idle(idle_count, self.pause)
                elif not self.is_parking:
                    # Announce the park first, then make one more pass: work handed over from
                    # here on sets the event, work handed over before it is seen by that pass.
                    self._wakeup.clear()
                    self.is_parking = True
                    register_parked(self)
                else:
                    self.long_parks += 1
                    self._wakeup.wait(self._long_park_s)
                    self._end_park()
        self._end_park()
        self._abandon_all()

    def _pass(self, trackers: list[TaskletTracker]) -> bool:
        """Call each tasklet once; whether any made progress. A method of its own so that its
        locals (the last tracker, the ended ones) go when it returns: held by a parked
        thread's frame, a finished job's tasklets, and all they hold, stayed until the next job."""
        made_progress = finished = False
        ended: list[TaskletTracker] = []  # removed after the pass: one list rebuild, not one each
        for tracker in trackers:
            if tracker.stealing_worker is not None:
                self._give_away(tracker)
                continue
            if tracker.future.failure is not None:
                ended.append(tracker)
                _drop(tracker)
                continue
            state = _run_once(tracker)
            if state is None:
                ended.append(tracker)
            elif state & DONE_BIT:
                ended.append(tracker)
                _drop(tracker)
                finished = made_progress = True
            elif state:
                made_progress = True
        if ended:
            self._remove_all(ended)
            if finished:
                self._try_steal()
        return made_progress

    def _needs_polling(self, trackers: list[TaskletTracker]) -> bool:
        for tracker in trackers:
            if wants_polling(tracker.tasklet):
                return True
        return False

    def _end_park(self) -> None:
        self.is_parking = False
        unregister_parked(self)

    def _abandon_all(self) -> None:
        """On shutdown: end the jobs of every tasklet still here, so no future hangs."""
        self._adopt()
        for tracker in self.trackers:
            _abandon(tracker)
        self.trackers = []

    def _remove_all(self, ended: list[TaskletTracker]) -> None:
        gone = set(ended)  # trackers hash by identity
        self.trackers = [t for t in self.trackers if t not in gone]

    def _give_away(self, tracker: TaskletTracker) -> None:
        thief = tracker.stealing_worker
        tracker.stealing_worker = None
        self._remove_all([tracker])
        self.given_count += 1
        thief.add(tracker, stolen=True)

    def _try_steal(self) -> None:
        workers = self._service.workers
        victim = max(workers, key=lambda w: len(w.trackers))
        victim_trackers = victim.trackers
        if victim is self or len(victim_trackers) - len(self.trackers) < 2:
            return
        with _steal_lock:
            for tracker in victim_trackers:
                if tracker.stealing_worker is None:
                    tracker.stealing_worker = self
                    return


class TaskletExecutionService:
    """Runs the tasklets of any number of jobs on a fixed pool of cooperative threads."""

    def __init__(self, cooperative_threads: int = 1,
                 idle_strategy: BackoffIdleStrategy | None = None,
                 noncooperative_idle_strategy: BackoffIdleStrategy | None = None,
                 long_park_s: float = DEFAULT_LONG_PARK_S) -> None:
        if cooperative_threads < 1:
            raise ValueError(f"cooperative_threads must be >= 1, got {cooperative_threads}")
        self.cooperative_threads = cooperative_threads
        self.is_shut_down = False
        self._noncoop_idle = noncooperative_idle_strategy or BackoffIdleStrategy()
        self.workers = [CooperativeWorker(self, i, idle_strategy or BackoffIdleStrategy(), long_park_s)
                        for i in range(cooperative_threads)]
        self._next_worker = itertools.count()
        self._deal_lock = threading.Lock()
        self.noncooperative_threads: set[threading.Thread] = set()
        """The threads of the non-cooperative tasklets running now (each leaves when its tasklet ends)."""
        for worker in self.workers:
            worker.thread.start()

    def submit(self, tasklets: Sequence[Tasklet], job_name: str = "job") -> ExecutionFuture:
        """Start running ``tasklets``; the returned future completes when all are done."""
        if self.is_shut_down:
            raise RuntimeError("the execution service is shut down")
        future = ExecutionFuture(job_name, [t.name for t in tasklets])
        trackers = [TaskletTracker(t, future, i) for i, t in enumerate(tasklets)]
        for tracker in trackers:
            if tracker.tasklet.is_cooperative:
                with self._deal_lock:
                    worker = self.workers[next(self._next_worker) % len(self.workers)]
                worker.add(tracker)
            else:
                thread = threading.Thread(target=self._run_noncooperative, args=(tracker,),
                                          daemon=True, name=f"jet.noncooperative.{tracker.tasklet.name}")
                self.noncooperative_threads.add(thread)
                thread.start()
        return future

    def _run_noncooperative(self, tracker: TaskletTracker) -> None:
        try:
            self._call_noncooperative(tracker)
        finally:
            self.noncooperative_threads.discard(threading.current_thread())

    def _call_noncooperative(self, tracker: TaskletTracker) -> None:
        idle_count = 0
        waker = ProgressWaker(self._noncoop_idle.max_park_ns)
        pause = WakeablePause()
        while True:
            if self.is_shut_down:
                _abandon(tracker)
                return
            if tracker.future.failure is not None:
                _drop(tracker)
                return
            state = _run_once(tracker)
            if state is None:
                return
            if state & DONE_BIT:
                _drop(tracker)
                wake_parked_workers()  # its last items and DONE may be a parked thread's input
                return
            if state:
                idle_count = 0
                waker.on_progress()
            else:
                waker.on_idle()
                idle_count += 1
                self._noncoop_idle.idle(idle_count, pause)

    def shutdown(self) -> None:
        """Stop the worker threads (running jobs are abandoned; cancel them first)."""
        self.is_shut_down = True
        for worker in self.workers:
            worker.wake()
        self.noncooperative_threads = {t for t in list(self.noncooperative_threads) if t.is_alive()}

    def __enter__(self) -> "TaskletExecutionService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
