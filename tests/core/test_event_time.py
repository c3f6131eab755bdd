"""EventTimeMapper scenarios after Jet's EventTimeMapperTest, with explicit clocks."""

import pytest

from jet.core.event_time import (EventTimeMapper, EventTimePolicy, LimitingLagPolicy,
                                 LimitingRealTimeLagPolicy)
from jet.core.special_items import IDLE_MESSAGE, MIN_TIMESTAMP, Watermark


def ts_of(item):
    return item


def mapper(partitions=1, lag=0, frame=1, idle=0, **policy):
    m = EventTimeMapper(EventTimePolicy(timestamp_fn=policy.pop("timestamp_fn", ts_of),
                                        allowed_lag_ms=lag, frame_size_ms=frame,
                                        idle_timeout_ms=idle, **policy))
    m.add_partitions(partitions, now_ms=0)
    return m


def test_limiting_lag_follows_the_top_timestamp():
    policy = LimitingLagPolicy(5)
    assert policy.current_watermark(0) == MIN_TIMESTAMP
    for ts in (10, 7, 20, 3):
        policy.report_event(ts)
    assert policy.current_watermark(0) == 15
    real_time = LimitingRealTimeLagPolicy(100)
    real_time.report_event(10_000)
    assert real_time.current_watermark(500) == 400


def test_chunk_gets_pairs_then_the_watermark_due_after_it():
    m = mapper(lag=3)
    pairs, wm = m.map_chunk([10, 12, 11], 0, now_ms=0)
    assert pairs == [(10, 10), (12, 12), (11, 11)]
    assert wm == Watermark(9)
    assert m.map_chunk([8], 0, now_ms=1) == ([(8, 8)], None)  # no new top: nothing new
    assert m.map_chunk([13], 0, now_ms=2) == ([(13, 13)], Watermark(10))


def test_watermarks_are_throttled_to_frame_boundaries():
    m = mapper(lag=0, frame=10, frame_offset_ms=0)
    assert m.map_chunk([5], 0, 0)[1] == Watermark(0)
    assert m.map_chunk([9], 0, 0)[1] is None
    assert m.map_chunk([27], 0, 0)[1] == Watermark(20)


def test_frame_size_zero_suppresses_watermarks():
    m = mapper(frame=0)
    assert m.map_chunk([100, 200], 0, 0)[1] is None


def test_the_watermark_is_the_minimum_over_partitions_and_never_goes_back():
    m = mapper(partitions=2)
    assert m.map_chunk([10], 0, 0)[1] is None  # partition 1 has nothing yet: MIN
    assert m.map_chunk([5], 1, 0)[1] == Watermark(5)
    assert m.map_chunk([20], 1, 0)[1] == Watermark(10)
    m.add_partitions(1, now_ms=0)  # a new partition holds the minimum; emitted stays
    assert m.map_chunk([30], 0, 0)[1] is None
    assert m.last_emitted_wm == 10


def test_an_idle_partition_stops_holding_the_watermark_back():
    m = mapper(partitions=2, idle=100)
    assert m.map_chunk([10], 0, now_ms=0)[1] is None
    assert m.on_idle(now_ms=99) == []
    assert m.map_chunk([20], 0, now_ms=99)[1] is None
    # partition 1 never had an event: idle at 100; partition 0 active till 199
    assert m.on_idle(now_ms=100) == [Watermark(20)]


def test_all_idle_emits_the_top_watermark_then_idle_once():
    m = mapper(partitions=2, idle=100, frame=10)
    m.map_chunk([35], 0, now_ms=0)
    assert m.map_chunk([12], 1, now_ms=50)[1] == Watermark(10)
    assert m.on_idle(now_ms=100) == []  # partition 0 idle; partition 1 at 12 still floors to 10
    assert m.on_idle(now_ms=150) == [Watermark(30), IDLE_MESSAGE]  # the top, 35, floored
    assert m.on_idle(now_ms=500) == []
    # An event ends the idle state; going idle again repeats IDLE without a new wm.
    assert m.map_chunk([36], 1, now_ms=600)[1] is None
    assert m.on_idle(now_ms=700) == [IDLE_MESSAGE]


def test_idle_timeout_zero_disables_idleness():
    m = mapper(partitions=2, idle=0)
    m.map_chunk([10], 0, 0)
    assert m.on_idle(now_ms=10**9) == []


def test_native_timestamps_and_a_missing_timestamp_source():
    m = mapper(timestamp_fn=None)
    assert m.map_chunk(["a", "b"], 0, 0, timestamps=[4, 6]) == ([(4, "a"), (6, "b")], Watermark(6))
    with pytest.raises(ValueError, match="no timestamp_fn and the source gave no native timestamps"):
        m.map_chunk(["c"], 0, 0)
    with pytest.raises(ValueError, match="partition 3 out of range"):
        m.map_chunk(["c"], 3, 0, timestamps=[1])


def test_ingestion_time_stamps_the_wall_clock_and_advances_without_events():
    m = mapper(timestamp_fn=None, ingestion=True, lag=0, frame=100)
    pairs, wm = m.map_chunk(["a", "b"], 0, now_ms=1_250)
    assert pairs == [(1_250, "a"), (1_250, "b")] and wm == Watermark(1_200)
    assert m.on_idle(now_ms=1_290) == []
    assert m.on_idle(now_ms=1_420) == [Watermark(1_400)]


@pytest.mark.parametrize("fields, message", [
    ({"allowed_lag_ms": -1}, "allowed_lag_ms must be an int >= 0"),
    ({"frame_size_ms": 10, "frame_offset_ms": 10}, "frame_offset_ms must be < frame_size_ms = 10"),
    ({"idle_timeout_ms": "1s"}, "idle_timeout_ms must be an int >= 0"),
])
def test_bad_policies_are_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        EventTimePolicy(**fields)
