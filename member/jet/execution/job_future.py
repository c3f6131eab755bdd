"""ExecutionFuture: the completion of one job's tasklets on one member."""

from __future__ import annotations

import threading
from typing import Any, Callable

from jet.execution.backoff import wake_parked_workers
from jet.execution.errors import JobCancelledError, JobFailedError, JobTimeoutError
from jet.execution.tracebacks import format_user_first


class ExecutionFuture:
    """Completes when every tasklet of the job is done or dropped.

    The first error wins: workers see ``failure`` set and drop the job's other tasklets when
    they next reach them, so when the future completes no tasklet of the job runs any more.
    """

    def __init__(self, job_name: str, tasklet_names: list[str]) -> None:
        self.job_name = job_name
        self._lock = threading.Lock()
        self._running: dict[int, str] = dict(enumerate(tasklet_names))
        self._done = threading.Event()
        self._callbacks: list[Callable[["ExecutionFuture"], Any]] = []
        #: Read by the workers on every call; set once, by the first failure or a cancel.
        self.failure: JobFailedError | None = None
        if not tasklet_names:
            self._done.set()

    # -- worker side --------------------------------------------------------------------------
    def tasklet_done(self, tasklet_id: int) -> None:
        with self._lock:
            self._running.pop(tasklet_id, None)
            finished = not self._running
        if finished:
            self._complete()

    def tasklet_failed(self, tasklet_id: int, error: BaseException) -> None:
        name = self._running.get(tasklet_id, "?")
        text = format_user_first(error)
        failure = JobFailedError(
            f"job {self.job_name!r} failed in {name}: {type(error).__name__}: {error}\n{text}",
            tasklet=name, traceback_text=text)
        failure.__cause__ = error
        self.fail(failure)
        self.tasklet_done(tasklet_id)

    # -- caller side --------------------------------------------------------------------------
    def fail(self, failure: JobFailedError) -> bool:
        """Record ``failure`` unless the job already failed; True if it was recorded."""
        with self._lock:
            if self.failure is not None:
                return False
            self.failure = failure
        wake_parked_workers()  # a parked thread drops the job's tasklets when it next reaches them
        return True

    def cancel(self, reason: str = "cancelled") -> bool:
        """Stop the job: its tasklets are dropped when next reached."""
        return self.fail(JobCancelledError(f"job {self.job_name!r} was {reason}"))

    def is_done(self) -> bool:
        return self._done.is_set()

    def running_tasklets(self) -> list[str]:
        with self._lock:
            return list(self._running.values())

    def add_done_callback(self, callback: Callable[["ExecutionFuture"], Any]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def result(self, timeout: float | None = None) -> None:
        """Wait for the job; raise its failure, or JobTimeoutError naming what still runs."""
        if not self._done.wait(timeout):
            running = self.running_tasklets()
            raise JobTimeoutError(
                f"job {self.job_name!r} did not finish within {timeout} s; still running:"
                f" {', '.join(running)}", running)
        if self.failure is not None:
            raise self.failure

    def _complete(self) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
            self._done.set()
        for callback in callbacks:
            callback(self)
