"""An execution's end report (pickling its results) is built off the cooperative worker threads.

One real member in this process (gRPC server, coordinator, one cooperative thread shared by two
jobs): job A's result pickles slowly, job B counts its tasklet's calls. While A's result is
being pickled, B must keep making progress on the one worker thread.
"""

import threading
import time

from jet.cluster.coordination.coordinator import JobStatus
from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge, Processor

from tests.cluster.cluster_support import wait_until
from tests.cluster.member_support import member_in_this_process, submit_one_vertex

PROGRESS_NEEDED = 200
"""Calls job B must make while job A's result is being pickled."""
PICKLE_PATIENCE_S = 20.0
"""How long the slow result waits for job B's progress before giving up (a failsafe, not a measure)."""


class CountingP(Processor):
    """Job B: never finishes; counts its calls."""

    calls = 0

    def complete(self) -> bool:
        CountingP.calls += 1
        return False


class SlowToPickle:
    """Job A's one result item: its first pickling waits for job B to make progress."""

    seen: dict = {}

    def __reduce__(self):
        if not SlowToPickle.seen:
            SlowToPickle.seen["thread"] = threading.current_thread().name
            start = CountingP.calls
            deadline = time.monotonic() + PICKLE_PATIENCE_S
            while CountingP.calls < start + PROGRESS_NEEDED and time.monotonic() < deadline:
                time.sleep(0.001)
            SlowToPickle.seen["progress"] = CountingP.calls - start
        return SlowToPickle, ()


class EmitSlowP(Processor):
    def complete(self) -> bool:
        return self.outbox.offer(SlowToPickle())


def test_results_are_pickled_off_the_worker_threads_and_other_jobs_keep_running():
    with member_in_this_process() as member:
        job_b = submit_one_vertex(member, "count", CountingP)
        wait_until(lambda: CountingP.calls > 0, what="job B running")
        slow = DAG()
        source = slow.new_vertex("source", EmitSlowP, 1)
        sink = slow.new_vertex("sink", lambda: ListResultSinkP("default"), 1)
        slow.edge(Edge.between(source, sink))
        job_a = member.submit(slow)
        record = member.coordinator.wait(job_a, 60)
        assert record.status is JobStatus.COMPLETED, record.message
        assert not SlowToPickle.seen["thread"].startswith("jet.cooperative"), SlowToPickle.seen
        assert SlowToPickle.seen["progress"] >= PROGRESS_NEEDED, "job B progressed while A's result was pickled"
        assert [type(item) for item in member.coordinator.results(job_a)["default"]] == [SlowToPickle]
        member.coordinator.cancel(job_b)
        assert member.coordinator.wait(job_b, 30).status is JobStatus.FAILED
