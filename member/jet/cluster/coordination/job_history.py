"""Which finished jobs the coordinator still keeps (Jet keeps results 7 days, at most 1,000 jobs).

A finished job's record and results stay until it is older than ``ttl_s`` or more than
``max_count`` finished jobs are newer; the oldest finished job is forgotten first. Running jobs
are never counted or forgotten. Asking for a forgotten job is asking for an unknown job.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from jet.cluster.links.errors import NotFoundError, RetryLaterError


class UnknownJobError(NotFoundError):
    """No job with this id on the coordinator: never submitted, or forgotten from the history."""


class JobResumingError(RetryLaterError):
    """Member 0 restarted and has not taken over the jobs of its snapshot store yet, this one
    among them: ask again in a moment (clients' ``join`` does)."""


class FinishedJobs:
    """The finished jobs, oldest first, with their completion times (from ``clock``)."""

    def __init__(self, max_count: int, ttl_s: float, clock: Callable[[], float]) -> None:
        if max_count < 1 or ttl_s <= 0:
            raise ValueError(f"a job history needs max_count >= 1 and ttl_s > 0, got {max_count}, {ttl_s}")
        self.max_count = max_count
        self.ttl_s = ttl_s
        self._clock = clock
        self._completed_at: OrderedDict[str, float] = OrderedDict()

    def add(self, job_id: str, completion_time: float) -> list[str]:
        """Record a job that just finished; returns the ids of the jobs to forget now."""
        self._completed_at[job_id] = completion_time
        return self.expired()

    def expired(self) -> list[str]:
        """Forget (and return) the finished jobs past the age or beyond the count."""
        oldest_kept = self._clock() - self.ttl_s
        gone = []
        while self._completed_at:
            job_id, completed_at = next(iter(self._completed_at.items()))
            if completed_at >= oldest_kept and len(self._completed_at) <= self.max_count:
                break
            del self._completed_at[job_id]
            gone.append(job_id)
        return gone

    def describe(self) -> str:
        """The bounds, for error messages."""
        return f"the {self.max_count} most recent finished jobs, for {self.ttl_s:g} s after they end"
