import gc
import threading
import weakref

import pytest

from jet.core import DAG, Edge, Processor
from jet.core.edge import EdgeConfig
from jet.core.processors import items_source_p, map_p
from jet.execution import JobCancelledError, JobFailedError, execute
from jet.execution.backoff import BackoffIdleStrategy
from jet.execution.service import TaskletExecutionService
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS

from tests.execution.support import ThreadRecorder, wait_until


def _wait_until(condition, timeout=10.0):
    wait_until(condition, timeout)


class GatedTasklet:
    """Waits for ``gate``; then finishes at once (short) or after ``release`` (long)."""

    is_cooperative = True

    def __init__(self, name, gate, release=None):
        self.name, self._gate, self._release = name, gate, release
        self.threads = set()
        self._in_call = False
        self.overlapped = False

    def init(self):
        pass

    def close(self):
        pass

    def call(self):
        if self._in_call:
            self.overlapped = True
        self._in_call = True
        try:
            self.threads.add(threading.current_thread().name)
            if not self._gate.is_set():
                return NO_PROGRESS
            if self._release is None or self._release.is_set():
                return DONE
            return MADE_PROGRESS
        finally:
            self._in_call = False


def test_work_stealing_moves_a_tasklet_to_the_idle_worker_and_never_runs_it_twice_at_once():
    gate, release = threading.Event(), threading.Event()
    tasklets = [GatedTasklet(f"t{i}", gate, release if i % 2 == 0 else None) for i in range(6)]
    with TaskletExecutionService(2) as service:
        future = service.submit(tasklets, "steal")
        w0, w1 = service.workers
        _wait_until(lambda: len(w0.trackers) == 3 and len(w1.trackers) == 3)
        gate.set()  # t1, t3, t5 (on w1) finish; w1 then steals one of w0's long tasklets
        _wait_until(lambda: w1.stolen_count >= 1)
        release.set()
        future.result(timeout=10)
    assert w0.given_count == w1.stolen_count >= 1
    moved = [t for t in tasklets[::2] if len(t.threads) == 2]
    assert moved, "a long tasklet ran on both threads, one after the other"
    assert not any(t.overlapped for t in tasklets)


SHORT, LONG = 20_000, 200_000


class MixedSource(Processor):
    """Odd processors emit a short run of numbers, even ones a long run."""

    def complete(self):
        if not hasattr(self, "_left"):
            self._left = iter(range(SHORT if self.context.local_index % 2 else LONG))
        chunk = [x for _, x in zip(range(512), self._left)]
        if not chunk:
            return True
        self.outbox.offer_chunk(chunk)
        return False


class Summer(Processor):
    def __init__(self, totals):
        self._totals = totals

    def process(self, ordinal, inbox):
        self._totals.append(sum(inbox.take_chunk()))


def test_results_stay_exact_while_work_is_stolen():
    totals = []
    dag = DAG()
    source = dag.new_vertex("mixed", MixedSource, 6)
    double = dag.new_vertex("double", map_p(lambda x: 2 * x), 2)
    sink = dag.new_vertex("sum", lambda: Summer(totals), 1)
    # Jet's small queues: the sources are held back by their consumers, so the odd ones' early
    # end leaves one thread with too little to do while the other still has long runs to emit
    small = EdgeConfig(queue_size=1024, outbox_capacity=2048)
    dag.edge(Edge.between(source, double).set_config(small)).edge(Edge.between(double, sink).set_config(small))
    with TaskletExecutionService(2) as service:
        execute(dag, timeout=60, service=service)
        stolen = sum(w.stolen_count for w in service.workers)
    assert sum(totals) == 3 * 2 * sum(range(SHORT)) + 3 * 2 * sum(range(LONG))
    assert stolen >= 1


def test_backoff_doubles_from_2us_and_caps_at_1ms():
    slept = []
    strategy = BackoffIdleStrategy(sleep=slept.append)
    parks = [strategy.idle(n) for n in range(1, 14)]
    assert parks[:10] == [2_000 * 2 ** i for i in range(9)] + [1_000_000]
    assert parks[10:] == [1_000_000] * 3
    assert slept == [p / 1e9 for p in parks]
    assert strategy.park_ns(0) == 0


def test_an_idle_worker_backs_off_to_the_cap():
    gate = threading.Event()
    with TaskletExecutionService(1) as service:
        future = service.submit([GatedTasklet("idle", gate)], "idle")
        worker = service.workers[0]
        _wait_until(lambda: worker.last_park_ns == 1_000_000)
        assert worker.idle_passes >= 10
        gate.set()
        future.result(timeout=5)


def test_a_non_cooperative_processor_runs_on_its_own_thread():
    cooperative, dedicated = set(), set()
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(range(100)), 1)
    a = dag.new_vertex("cooperative", lambda: ThreadRecorder(cooperative), 1)
    b = dag.new_vertex("blocking", lambda: ThreadRecorder(dedicated, cooperative=False), 1)
    dag.edge(Edge.between(source, a).broadcast()).edge(Edge.from_(source, 1).to(b).broadcast())
    execute(dag, cooperative_threads=2, timeout=10)
    assert all(name.startswith("jet.cooperative.thread-") for name in cooperative)
    assert dedicated == {"jet.noncooperative.blocking#0"}


def _fails_on_five(x):
    if x == 5:
        raise ZeroDivisionError("user code divided by zero")
    return x


def test_a_failing_user_function_fails_the_job_with_its_traceback_and_stops_everything():
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(range(1_000_000)), 1)
    mapper = dag.new_vertex("mapper", map_p(_fails_on_five), 2)
    sink = dag.new_vertex("sink", lambda: ThreadRecorder(set()), 1)
    dag.edge(Edge.between(source, mapper)).edge(Edge.between(mapper, sink))
    with TaskletExecutionService(2) as service:
        with pytest.raises(JobFailedError) as failure:
            execute(dag, timeout=30, service=service)
        assert all(not w.trackers for w in service.workers), "no tasklet keeps running"
    assert isinstance(failure.value.__cause__, ZeroDivisionError)
    assert "_fails_on_five" in failure.value.traceback_text
    assert "user code divided by zero" in str(failure.value)
    assert failure.value.tasklet.startswith("mapper#")


class Endless(Processor):
    def complete(self):
        return False


def test_cancel_stops_a_job_that_would_never_end():
    dag = DAG()
    dag.new_vertex("endless", Endless, 2)
    from jet.execution.plan import ExecutionPlan
    with TaskletExecutionService(1) as service:
        future = service.submit(ExecutionPlan(dag).build(), "endless")
        assert not future.wait(0.05)
        future.cancel()
        with pytest.raises(JobCancelledError):
            future.result(timeout=5)
        assert future.running_tasklets() == []


class CountingTasklet:
    """A non-cooperative tasklet that makes progress on every call and never finishes by itself."""

    is_cooperative = False

    def __init__(self, name):
        self.name = name
        self.calls = 0

    def init(self):
        pass

    def close(self):
        pass

    def call(self):
        self.calls += 1
        return MADE_PROGRESS


def test_a_job_cut_short_by_shutdown_is_cancelled_never_completed():
    tasklet = CountingTasklet("mid-job")
    service = TaskletExecutionService(1)
    future = service.submit([tasklet], "cut-short")
    _wait_until(lambda: tasklet.calls > 0)
    service.shutdown()
    assert future.wait(10), "the job's future ends when the service shuts down"
    assert isinstance(future.failure, JobCancelledError)
    assert "shut down" in str(future.failure)
    with pytest.raises(JobCancelledError):
        future.result(timeout=0)


class Payload:
    """What a finished job's processor may hold (a window, a result list)."""


class HoldingTasklet:
    """Holds a payload; done at its first call (a non-cooperative one on a thread of its own)."""

    def __init__(self, name, payload, cooperative=True):
        self.name, self.payload, self.is_cooperative = name, payload, cooperative

    def init(self):
        pass

    def close(self):
        pass

    def call(self):
        return DONE


@pytest.mark.parametrize("cooperative", [True, False])
def test_a_finished_job_is_freed_at_once_not_by_the_cyclic_collector(cooperative):
    """A parked worker thread's frame held the last pass's tasklets until the next job came, and
    the service kept every non-cooperative tasklet's thread: what a job held stayed after it."""
    gc.disable()  # only reference counting may free it
    try:
        with TaskletExecutionService(1) as service:
            payload = Payload()
            alive = weakref.ref(payload)
            service.submit([HoldingTasklet("holder", payload, cooperative)], "holding").result(timeout=5)
            del payload
            _wait_until(lambda: alive() is None and not service.noncooperative_threads)
    finally:
        gc.enable()
