"""End reports are built on a few threads reused from execution to execution, in a forked
member as in any other process."""

import os
import threading

from jet.cluster.executions.report_threads import REPORT_THREAD_PREFIX, REPORT_THREADS, report_threads


def _report_thread_count() -> int:
    return sum(t.name.startswith(REPORT_THREAD_PREFIX) for t in threading.enumerate())


def test_reports_reuse_a_few_threads():
    pool = report_threads()
    assert report_threads() is pool
    names = {pool.submit(lambda: threading.current_thread().name).result(5) for _ in range(200)}
    assert all(name.startswith(REPORT_THREAD_PREFIX) for name in names)
    assert 1 <= _report_thread_count() <= REPORT_THREADS


def test_a_forked_child_gets_report_threads_of_its_own():
    report_threads().submit(lambda: None).result(5)  # the parent has a live, idle one
    pid = os.fork()
    if pid == 0:  # the child: its parent's threads are gone; a report must still be built
        code = 1
        try:
            code = 0 if report_threads().submit(lambda: 42).result(5) == 42 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
