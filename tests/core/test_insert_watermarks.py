import pytest

from jet.core.event_time import EventTimePolicy
from jet.core.processors import insert_watermarks_p
from jet.core.special_items import IDLE_MESSAGE, Watermark
from jet.core.test_support import TestSupport
from tests.core.stream_driver import FakeClock, StreamDriver


def event_ts(event):
    return event[0]


def consistent_with_lag(timestamps, lag, frame):
    """A checker: the pairs are the events in order, and each watermark is the throttled
    ``max(ts so far) - lag`` at its position, strictly increasing, the last one covering all."""
    def check(_expected, actual):
        pairs = [entry for entry in actual if type(entry) is not Watermark]
        if pairs != [(ts, (ts, n)) for n, ts in enumerate(timestamps)]:
            return False
        top, last_wm = None, None
        for entry in actual:
            if type(entry) is Watermark:
                due = (top - lag) // frame * frame
                if entry.timestamp != due or (last_wm is not None and entry.timestamp <= last_wm):
                    return False
                last_wm = entry.timestamp
            else:
                top = entry[0] if top is None else max(top, entry[0])
        return last_wm == (max(timestamps) - lag) // frame * frame
    return check


def test_items_are_stamped_and_followed_by_throttled_watermarks():
    timestamps = [100, 130, 120, 250, 240, 410, 90]
    events = [(ts, n) for n, ts in enumerate(timestamps)]
    policy = EventTimePolicy(timestamp_fn=event_ts, allowed_lag_ms=20, frame_size_ms=100)
    TestSupport.verify_processor(insert_watermarks_p(policy, clock_ms=FakeClock())).input(events) \
        .output_checker(consistent_with_lag(timestamps, 20, 100)).expect_output([])


def test_late_items_are_never_dropped():
    policy = EventTimePolicy(timestamp_fn=event_ts, allowed_lag_ms=0)
    driver = StreamDriver(insert_watermarks_p(policy, clock_ms=FakeClock()))
    driver.process([(50, "a")]).process([(10, "late")])
    assert driver.take() == [(50, (50, "a")), Watermark(50), (10, (10, "late"))]
    assert driver.processor.late_events_dropped == 0


def test_idle_source_emits_its_top_watermark_then_idle_from_try_process():
    clock = FakeClock(1_000)
    policy = EventTimePolicy(timestamp_fn=event_ts, allowed_lag_ms=10, idle_timeout_ms=500,
                             frame_size_ms=1)
    driver = StreamDriver(insert_watermarks_p(policy, clock_ms=clock))
    driver.process([(100, "a")])
    assert driver.take() == [(100, (100, "a")), Watermark(90)]
    clock.now_ms = 1_499
    assert driver.try_process().take() == []
    clock.now_ms = 1_500
    assert driver.try_process().take() == [IDLE_MESSAGE]
    assert driver.try_process().take() == []


def test_ingestion_time_watermarks_advance_with_the_clock():
    clock = FakeClock(10_000)
    policy = EventTimePolicy(ingestion=True, allowed_lag_ms=0, frame_size_ms=1_000)
    driver = StreamDriver(insert_watermarks_p(policy, clock_ms=clock))
    driver.process(["x"])
    assert driver.take() == [(10_000, "x"), Watermark(10_000)]
    clock.now_ms = 12_345
    assert driver.try_process().take() == [Watermark(12_000)]


def test_policy_must_be_an_event_time_policy():
    with pytest.raises(TypeError, match="policy must be an EventTimePolicy"):
        insert_watermarks_p({"lag": 3})
