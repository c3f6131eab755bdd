"""Scaling jobs up after members join (Jet's ``scaleUpDelayMillis``).

A join arms a countdown of ``delay_ms``; a later join starts it again, so a cluster that gains
several members in a row restarts its jobs once, after the last one. When the countdown runs out
the timer calls ``scale_up()`` on a thread of its own; a True answer (a job was still starting on
too few members, so it could not be restarted yet) arms the countdown once more.
:class:`JobScaling` is what the coordinator does then: every job with ``auto_scaling`` that runs
without a member that is up restarts gracefully (a terminal snapshot, then an execution on all
the members; a job without a guarantee is cancelled and starts again from scratch).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Mapping

from jet.cluster.coordination.context import CoordinationContext
from jet.cluster.coordination.job_state import JobRun, JobStateError, JobStatus, Termination

log = logging.getLogger("jet.cluster.coordination.coordinator")

RestartRequest = Callable[..., Any]
"""``request(run, Termination.RESTART, allowed=...)``: ask a running job to restart."""


class ScaleUpTimer:
    """Calls ``scale_up()`` ``delay_ms`` after the last :meth:`member_joined`."""

    def __init__(self, delay_ms: int, scale_up: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._delay_s = delay_ms / 1000
        self._scale_up = scale_up
        self._clock = clock
        self._changed = threading.Condition()
        self._due: float | None = None
        self._stopped = False
        self._thread: threading.Thread | None = None

    def member_joined(self) -> None:
        """(Re)start the countdown; quick, so callers may hold their own locks."""
        with self._changed:
            if self._stopped:
                return
            self._due = self._clock() + self._delay_s
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jet-scale-up", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def stop(self) -> None:
        """No more calls of ``scale_up`` (one under way finishes)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def _run(self) -> None:
        while self._wait_until_due():
            try:
                again = self._scale_up()
            except Exception:  # noqa: BLE001 - the timer must outlive one bad round
                log.exception("scaling jobs up failed")
                again = False
            if again:
                self.member_joined()

    def _wait_until_due(self) -> bool:
        """Block until the countdown ran out (True) or the timer stopped (False)."""
        with self._changed:
            while not self._stopped:
                if self._due is not None:
                    left = self._due - self._clock()
                    if left <= 0:
                        self._due = None
                        return True
                    self._changed.wait(left)
                else:
                    self._changed.wait()
            return False


class JobScaling:
    """Scales up the jobs with ``auto_scaling`` that run without a member that is up, given the
    coordination's shared parts, the jobs (guarded by the context's condition) and how to ask a
    job for a graceful restart (:meth:`~.job_control.JobControl.request`)."""

    def __init__(self, context: CoordinationContext, jobs: Mapping[str, JobRun], request: RestartRequest) -> None:
        self._context = context
        self._jobs = jobs
        self._request = request

    def scale_up_jobs(self) -> bool:
        """Restart gracefully every job with ``auto_scaling`` that runs without a member that
        is up; True when such a job is still starting (to be tried again after the delay)."""
        context = self._context
        with context.changed:
            up = context.up_members()
            smaller = [run for run in self._jobs.values()
                       if run.config.auto_scaling and run.execution is not None
                       and run.record.status in (JobStatus.STARTING, JobStatus.RUNNING)
                       and set(up) - set(run.execution.members)]
        starting = False
        for run in smaller:
            with context.changed:
                if run.record.status is JobStatus.STARTING:
                    starting = True
                    continue
                if run.requested is not None:  # being stopped: its next execution takes every member up
                    continue
                joined = sorted(set(up) - set(run.execution.members))
                run.restart_cause = (f"scaling up from {len(run.execution.members)} to {len(up)} members "
                                     f"(member(s) {', '.join(map(str, joined))} joined)")
            log.info("job %s: %s", run.record.job_id, run.restart_cause)
            try:
                self._request(run, Termination.RESTART, allowed=(JobStatus.RUNNING,))
            except JobStateError as e:  # it stopped meanwhile; its next execution takes every member up
                log.debug("job %s does not scale up: %s", run.record.job_id, e)
                with context.changed:
                    run.restart_cause = ""
        return starting
