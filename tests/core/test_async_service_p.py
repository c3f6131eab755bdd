"""The async transform processor driven by hand, with futures the test finishes itself: the bound
on unfinished items (backpressure as queue sizes, not timing), watermarks held behind pending
calls, snapshots waiting for every call, failures with the user's own frames."""

from concurrent.futures import Future

import pytest

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors.async_service import async_transform_using_service_p
from jet.core.service_factory import ServiceFactories
from jet.core.special_items import Watermark


class Calls:
    """The service: every call returns a new future, kept here for the test to finish."""

    def __init__(self):
        self.futures: dict = {}

    def __call__(self, _service, item):
        future = Future()
        self.futures[item] = future
        return future

    def finish(self, item, result=None, error=None):
        future = self.futures[item]
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(item * 10 if result is None else result)


class Harness:
    """A processor with an outbox of ``capacity`` whose buckets and watermarks the 'engine'
    takes after every call (unless ``stalled``)."""

    def __init__(self, calls, max_ops=3, ordered=True, capacity=100, kind="map", pairs=False):
        supplier = async_transform_using_service_p(kind, ServiceFactories.non_shared_service(lambda: "svc"),
                                                   calls, pairs=pairs, max_concurrent_ops=max_ops,
                                                   preserve_order=ordered)
        self.processor = supplier()
        self.outbox = Outbox(1, capacity)
        self.processor.init(self.outbox, Context(vertex_name="enrich"))
        self.inbox = Inbox()
        self.out: list = []
        self.stalled = False

    def feed(self, items):
        self.inbox.add_chunk(list(items))

    def _take(self):
        if self.stalled:
            return
        self.out.extend(self.outbox.buckets[0])
        self.outbox.buckets[0].clear()
        if self.outbox.pending_special is not None:
            self.out.append(self.outbox.pending_special)
            self.outbox.special_taken()

    def process(self):
        for _ in range(5):
            if self.inbox:
                self.processor.process(0, self.inbox)
            else:
                self.processor.try_process()
            self._take()

    def watermark(self, ts):
        taken = self.processor.try_process_watermark(Watermark(ts))
        self._take()
        return taken

    def call(self, method):
        done = getattr(self.processor, method)()
        self._take()
        return done


@pytest.mark.parametrize("ordered", [True, False])
def test_a_slow_service_stops_the_intake_at_the_bound(ordered):
    calls = Calls()
    h = Harness(calls, max_ops=3, ordered=ordered)
    h.feed(range(1000))
    h.process()
    assert sorted(calls.futures) == [0, 1, 2] and len(h.inbox) == 997
    assert h.processor.unfinished == 3 and h.processor.needs_polling
    calls.finish(1)
    h.process()
    if ordered:  # item 1 waits behind item 0: still unfinished, the intake stays shut
        assert h.out == [] and len(calls.futures) == 3
        calls.finish(0)
        h.process()
        assert h.out == [0, 10] and sorted(calls.futures) == [0, 1, 2, 3, 4]
    else:
        assert h.out == [10] and sorted(calls.futures) == [0, 1, 2, 3]
    assert h.processor.max_unfinished_seen == 3


def test_a_full_outbox_stops_the_intake_so_memory_stays_bounded():
    calls = Calls()
    h = Harness(calls, max_ops=2, ordered=False, capacity=4)
    h.stalled = True  # downstream takes nothing: the bucket fills up to its capacity
    h.feed(range(1000))
    called = []
    for _ in range(30):
        h.process()
        for item, future in list(calls.futures.items()):
            if not future.done():
                calls.finish(item)
        called.append(len(calls.futures))
    # bucket (capacity 4, one chunk of overshoot) + outputs it refused + calls out: never more
    assert called[-1] == called[10] <= 4 + 2 + 2 + 2, called
    assert len(h.inbox) == 1000 - called[-1]
    h.stalled = False
    h.process()
    assert len(calls.futures) > called[-1]  # taken again once downstream drains


@pytest.mark.parametrize("ordered", [True, False])
def test_a_watermark_waits_for_the_calls_before_it(ordered):
    calls = Calls()
    h = Harness(calls, max_ops=10, ordered=ordered, pairs=True)
    h.feed([(5, 1), (6, 2)])
    h.process()
    assert h.watermark(6) is True  # taken into the queue, not forwarded
    h.feed([(7, 3)])
    h.process()
    calls.finish(3)
    h.process()
    assert Watermark(6) not in h.out
    calls.finish(2)
    h.process()
    assert Watermark(6) not in h.out
    calls.finish(1)
    h.process()
    wm_at = h.out.index(Watermark(6))
    assert sorted(h.out[:wm_at]) == [(5, 10), (6, 20)] if ordered else {(5, 10), (6, 20)} <= set(h.out[:wm_at])
    assert (7, 30) in h.out
    assert h.call("complete") is True


def test_a_snapshot_barrier_waits_until_every_call_is_out():
    calls = Calls()
    h = Harness(calls, max_ops=4)
    h.feed(range(3))
    h.process()
    assert h.call("save_to_snapshot") is False
    for item in range(3):
        calls.finish(item)
    assert h.call("save_to_snapshot") is True
    assert h.out == [0, 10, 20] and h.outbox.snapshot_entries == []


def test_a_failed_call_raises_the_users_exception():
    calls = Calls()
    h = Harness(calls)
    h.feed([1, 2])
    h.process()
    calls.finish(1, error=LookupError("no such customer 1"))
    with pytest.raises(LookupError, match="no such customer 1"):
        h.process()


def test_a_function_returning_no_future_is_refused_naming_the_vertex():
    h = Harness(lambda service, item: item)
    h.feed([1])
    with pytest.raises(TypeError, match="vertex 'enrich'.*Future or an awaitable, got int"):
        h.process()


def test_filter_and_flat_map_results():
    calls = Calls()
    h = Harness(calls, kind="flat_map")
    h.feed([1, 2])
    h.process()
    calls.finish(1, result=["a", "b"])
    calls.finish(2, result=[])
    h.process()
    assert h.out == ["a", "b"]
    calls = Calls()
    h = Harness(calls, kind="filter")
    h.feed([1, 2])
    h.process()
    calls.finish(1, result=False)
    calls.finish(2, result=True)
    h.process()
    assert h.out == [2]


def test_a_barrier_never_passes_a_watermark_this_call_released():
    calls = Calls()
    h = Harness(calls, pairs=True)
    h.feed([(5, 1)])
    h.process()
    h.watermark(5)
    calls.finish(1)
    assert h.processor.save_to_snapshot() is False  # the watermark went into the outbox just now
    assert h.outbox.pending_special == Watermark(5)
    h._take()
    assert h.processor.save_to_snapshot() is True
    assert h.out == [(5, 10), Watermark(5)]
