"""The few threads that build and send the end reports of a member's executions.

An execution's report (its figures, measurements and results, encoded) is built off the
cooperative thread that finished its last tasklet, and sent to the coordinator from the same
thread, retried for ``report_retry_ms`` when it does not get through. A thread started per
execution, handing the report to a pool of senders, cost each member two thread hand-overs per
job and its worker more than the rest of a tiny job's completion; these threads are reused from
job to job instead.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

REPORT_THREAD_PREFIX = "jet.execution-report"
REPORT_THREADS = 4
"""At most this many reports are built or sent at once; more wait for a thread."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def report_threads() -> ThreadPoolExecutor:
    """The process's report threads, started with its first finished execution."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(REPORT_THREADS, thread_name_prefix=REPORT_THREAD_PREFIX)
        return _pool


def _forget_after_fork() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()  # a forked member has none of its parent's threads


os.register_at_fork(after_in_child=_forget_after_fork)
