"""An idle cooperative thread parks on its wake-up signal, and whatever gives it work wakes it.

The threads here park for an hour (``long_park_s=3600``), so a test that ends at all shows that
the wake-up came from the signal under test, not from the park's timeout.
"""

import pickle
import threading

import pytest
from jet.cluster.edges.chunk_packets import encode_chunk
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.core import Processor
from jet.execution import JobCancelledError
from jet.execution.backoff import (WAKEABLE_FROM_S, BackoffIdleStrategy, ProgressWaker, WakeablePause, parked_workers,
                                   pausing_threads, wake_parked_workers)
from jet.execution.outbound import SingleTargetCollector
from jet.execution.processor_tasklet import ProcessorTasklet
from jet.execution.queues import DONE_ITEM, SpscQueue
from jet.execution.service import TaskletExecutionService
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS

from tests.execution.support import wait_until

HOUR = 3600.0




def _parked(worker, parks=1):
    return lambda: worker.long_parks >= parks and worker.is_parking


class InboxTasklet:
    """Consumes a plain list another thread fills; waits for input without polling."""

    is_cooperative = True

    def __init__(self, name, polled=False):
        self.name, self.polled = name, polled
        self.items: list = []
        self.seen: list = []
        self.calls = 0

    def init(self):
        pass

    def close(self):
        pass

    def wants_polling(self):
        return self.polled

    def call(self):
        self.calls += 1
        if not self.items:
            return NO_PROGRESS
        self.seen.append(self.items.pop(0))
        return DONE if self.seen[-1] == "end" else MADE_PROGRESS


class GatedProducer:
    """A polled tasklet that puts one item into ``target.items`` once ``gate`` is set."""

    is_cooperative = True

    def __init__(self, gate, target):
        self.name, self._gate, self._target = "producer", gate, target

    def init(self):
        pass

    def close(self):
        pass

    def call(self):
        if not self._gate.is_set():
            return NO_PROGRESS
        self._target.items.append("end")
        return DONE


def test_an_idle_thread_parks_once_and_stops_calling_its_tasklets():
    consumer = InboxTasklet("consumer")
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        worker = service.workers[0]
        future = service.submit([consumer], "idle")
        wait_until(_parked(worker))
        calls = consumer.calls
        assert worker in parked_workers
        # Parked, not polled: ten wake-ups of nothing cost ten short passes, not a thousand a second.
        for _ in range(10):
            parks = worker.long_parks
            wake_parked_workers()
            wait_until(_parked(worker, parks + 1))
        assert consumer.calls - calls <= 2 * 10 + 2
        assert worker.long_parks >= 11
        consumer.items.append("end")
        wake_parked_workers()
        future.result(timeout=20)
        assert consumer.seen == ["end"]


def test_a_tasklet_that_wants_polling_keeps_its_thread_polling():
    polled = InboxTasklet("polled", polled=True)
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        worker = service.workers[0]
        future = service.submit([polled, InboxTasklet("quiet")], "polled")
        wait_until(lambda: worker.idle_passes > 200)
        assert worker.long_parks == 0 and not worker.is_parking
        polled.items.append("end")  # no wake-up: polling finds it
        wait_until(lambda: polled.seen == ["end"])
        future.cancel()
        with pytest.raises(JobCancelledError):
            future.result(timeout=20)


def test_a_frame_for_a_receiver_wakes_its_parked_thread():
    queue = SpscQueue(1024, "to-sink")
    receiver = ReceiverTasklet("receiver", SingleTargetCollector([queue], 0), ReceiveWindow())
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        worker = service.workers[0]
        future = service.submit([receiver], "receive")
        wait_until(_parked(worker))
        parks = worker.long_parks
        receiver.enqueue(encode_chunk(1, 0, 0, ["a", "b"]))
        wait_until(lambda: queue.size() == 2 or future.failure)
        assert future.failure is None and queue.poll() == ["a", "b"]
        wait_until(_parked(worker, parks + 1))
        receiver.enqueue(encode_chunk(1, 0, 0, [], done=True))
        future.result(timeout=20)
        assert queue.poll() is DONE_ITEM


def test_a_producer_on_another_cooperative_thread_wakes_the_parked_consumer():
    gate = threading.Event()
    consumer = InboxTasklet("consumer")
    with TaskletExecutionService(2, long_park_s=HOUR) as service:
        future = service.submit([GatedProducer(gate, consumer), consumer], "two threads")
        consumer_worker = service.workers[1]
        wait_until(_parked(consumer_worker))
        assert service.workers[0].long_parks == 0  # the producer is polled
        gate.set()
        future.result(timeout=20)
        assert consumer.seen == ["end"]


def test_a_producer_on_a_noncooperative_thread_wakes_the_parked_consumer():
    gate = threading.Event()
    consumer = InboxTasklet("consumer")
    producer = GatedProducer(gate, consumer)
    producer.is_cooperative = False
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        future = service.submit([producer, consumer], "blocking producer")
        wait_until(_parked(service.workers[0]))
        gate.set()
        future.result(timeout=20)
        assert consumer.seen == ["end"]


def test_cancelling_a_job_wakes_its_parked_thread():
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        future = service.submit([InboxTasklet("consumer")], "to cancel")
        wait_until(_parked(service.workers[0]))
        future.cancel()
        with pytest.raises(JobCancelledError):
            future.result(timeout=20)


class Sink(Processor):
    def process(self, ordinal, inbox):
        inbox.clear()


class TimedSink(Sink):
    def try_process(self):
        return True


class QuietSource(Processor):
    needs_polling = False

    def complete(self):
        return False


def _tasklet(processor, inputs):
    from jet.core.processor import Context
    from jet.execution.inbound import InboundEdgeStream

    streams = [InboundEdgeStream(0, 0, [SpscQueue(16)])] if inputs else []
    tasklet = ProcessorTasklet("p", processor, Context(), streams, [], [])
    tasklet.init()
    return tasklet


def test_which_processors_are_polled():
    assert not _tasklet(Sink(), inputs=True).wants_polling()  # waits for its input
    assert _tasklet(TimedSink(), inputs=True).wants_polling()  # try_process may be time-driven
    assert _tasklet(Processor(), inputs=False).wants_polling()  # a source polls by default
    assert not _tasklet(QuietSource(), inputs=False).wants_polling()  # unless it says otherwise
    waiting = _tasklet(Sink(), inputs=True)
    waiting.inbox.add_chunk(["x"])
    assert waiting.wants_polling()  # work in hand is never parked on


def test_a_thread_whose_tasklets_need_no_polling_parks_at_its_first_idle_pass():
    with TaskletExecutionService(1, idle_strategy=BackoffIdleStrategy(1_000, 64_000),
                                 long_park_s=HOUR) as service:
        worker = service.workers[0]
        service.submit([InboxTasklet("consumer")], "no backoff")
        wait_until(_parked(worker))
        # No backoff first (it would only poll tasklets whose work wakes the thread anyway): the
        # first idle pass announces the park, one more pass catches work handed over meanwhile.
        assert worker.idle_passes == 2
        assert worker.last_park_ns == 0


class QuietCountingSource(QuietSource):
    """Saves one key; notes the snapshot it committed (both only when its thread runs it)."""

    committed: list = []

    def save_to_snapshot(self):
        return self.outbox.offer_to_snapshot("offset", 42)

    def snapshot_commit_finish(self, success):
        self.committed.append(success)
        return True


def test_a_snapshot_wakes_a_parked_source_for_both_phases():
    from jet.core import DAG, Edge
    from jet.execution.plan import ExecutionPlan, MemberTopology
    from jet.execution.snapshot_context import SnapshotContext
    from jet.job_config import ProcessingGuarantee

    dag = DAG()
    source = dag.new_vertex("source", QuietCountingSource, 1)
    dag.edge(Edge.between(source, dag.new_vertex("sink", Sink, 1)))
    written = []
    with TaskletExecutionService(1, long_park_s=HOUR) as service:
        context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE)
        future = service.submit(ExecutionPlan(dag, snapshot_context=context, topology=MemberTopology()).build(), "job")
        worker = service.workers[0]
        wait_until(_parked(worker))
        parks = worker.long_parks
        write = lambda vertex, sequence, chunk, group: written.extend(pickle.loads(chunk)[1]) or len(chunk)  # noqa: E731
        assert context.start_phase1(0, False, write).result(timeout=20)["keys"] == 1
        assert written == [("offset", 42)]
        wait_until(_parked(worker, parks + 1))
        context.start_phase2(0, True).result(timeout=20)
        assert QuietCountingSource.committed == [True]
        future.cancel()


# -- backoff pauses: a thread that polls is woken too ------------------------------------------
AN_HOUR_OF_BACKOFF_NS = 3_600 * 10**9


def test_work_ends_the_backoff_pause_of_a_polling_cooperative_thread():
    # A tasklet that wants polling keeps the thread in its backoff; each pause here lasts an
    # hour, so the job ends only if the wake-up ends the pause.
    polled = InboxTasklet("polled", polled=True)
    backoff = BackoffIdleStrategy(AN_HOUR_OF_BACKOFF_NS, AN_HOUR_OF_BACKOFF_NS)
    with TaskletExecutionService(1, idle_strategy=backoff, long_park_s=HOUR) as service:
        worker = service.workers[0]
        future = service.submit([polled], "paused")
        wait_until(lambda: worker.pause in pausing_threads)
        assert worker.long_parks == 0 and not worker.is_parking
        polled.items.append("end")
        wake_parked_workers()
        future.result(timeout=20)
        assert polled.seen == ["end"]


def test_work_ends_the_backoff_pause_of_a_non_cooperative_thread():
    consumer = InboxTasklet("blocking consumer")
    consumer.is_cooperative = False
    backoff = BackoffIdleStrategy(AN_HOUR_OF_BACKOFF_NS, AN_HOUR_OF_BACKOFF_NS)
    with TaskletExecutionService(1, noncooperative_idle_strategy=backoff, long_park_s=HOUR) as service:
        future = service.submit([consumer], "paused")
        wait_until(lambda: consumer.calls >= 1 and pausing_threads)
        consumer.items.append("end")
        wake_parked_workers()
        future.result(timeout=20)
        assert consumer.seen == ["end"]


class Collect(Processor):
    is_cooperative = False

    def __init__(self):
        self.items = []

    def process(self, ordinal, inbox):
        self.items.extend(inbox.take_chunk())


def test_a_special_item_in_a_queue_wakes_its_pausing_consumer_at_once():
    # Data alone wakes nobody here (a producer's thread wakes parked threads, never pausing
    # ones); a watermark, barrier or DONE does, since someone waits for each.
    from jet.core.processor import Context
    from jet.execution.inbound import InboundEdgeStream

    queue = SpscQueue(16, "to-consumer")
    processor = Collect()
    tasklet = ProcessorTasklet("consumer", processor, Context(), [InboundEdgeStream(0, 0, [queue])], [], [])
    backoff = BackoffIdleStrategy(AN_HOUR_OF_BACKOFF_NS, AN_HOUR_OF_BACKOFF_NS)
    with TaskletExecutionService(1, noncooperative_idle_strategy=backoff, long_park_s=HOUR) as service:
        future = service.submit([tasklet], "consumer")
        wait_until(lambda: pausing_threads)
        assert queue.offer_chunk(["a", "b"]) == 2
        assert queue.offer_special(DONE_ITEM)
        future.result(timeout=20)
        assert processor.items == ["a", "b"]


class Sleeper:
    def __init__(self):
        self.woken = 0

    def wake(self):
        self.woken += 1


def test_a_busy_threads_progress_wakes_parked_threads_but_leaves_pausing_ones_alone():
    # A pause ends within the backoff cap by itself, as often as this waker would end it.
    parked, pausing = Sleeper(), Sleeper()
    parked_workers.add(parked)
    pausing_threads.add(pausing)
    try:
        waker = ProgressWaker(interval_ns=0)
        waker.on_progress()
        waker.on_progress()
        assert (parked.woken, pausing.woken) == (2, 0)
        wake_parked_workers()  # work handed over wakes both
        assert (parked.woken, pausing.woken) == (3, 1)
    finally:
        parked_workers.discard(parked)
        pausing_threads.discard(pausing)


def test_a_pause_shorter_than_the_wakeable_threshold_only_sleeps():
    # Waiting on the event costs more CPU than a sleep, and a wake-up could save little of it.
    signal = threading.Event()
    pause = WakeablePause(signal)
    signal.set()
    pause(WAKEABLE_FROM_S / 10)
    assert signal.is_set()  # slept: the signal was neither cleared nor waited on
    pause(WAKEABLE_FROM_S)
    assert not signal.is_set() and not pausing_threads  # cleared, waited on, then left
