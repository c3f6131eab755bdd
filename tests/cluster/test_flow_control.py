"""Jet's receive-window flow control with injected time (mirrors ReceiverTaskletSendLimitTest)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jet.cluster.edges.chunk_packets import chunk_footprint
from jet.cluster.edges.flow_control import (
    COMPRESSED_SEQ_UNIT_LOG2,
    INITIAL_RECEIVE_WINDOW_COMPRESSED,
    ITEM_FOOTPRINT_OVERHEAD_BYTES,
    ReceiveWindow,
    SendLimit,
    compress_seq,
    to_int32,
)

START_NS = 10_000_000_000
PERIOD_NS = 100_000_000
MULTIPLIER = 3
UNITS_PER_PERIOD = 1000
BYTES_PER_PERIOD = UNITS_PER_PERIOD << COMPRESSED_SEQ_UNIT_LOG2


def _at(i: int) -> int:
    return START_NS + i * PERIOD_NS


def _warm_up(window: ReceiveWindow, periods: int = 15) -> int:
    """Ack a steady 1000 units per period; returns the last limit."""
    limit = 0
    for i in range(periods):
        window.on_item_acked(BYTES_PER_PERIOD)
        limit = window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=True)
    return limit


def test_constants_and_units():
    assert (COMPRESSED_SEQ_UNIT_LOG2, INITIAL_RECEIVE_WINDOW_COMPRESSED, ITEM_FOOTPRINT_OVERHEAD_BYTES) == (16, 800, 56)
    assert compress_seq(65_535) == 0 and compress_seq(65_536) == 1
    assert chunk_footprint(100, 1) == 156 and chunk_footprint(1000, 10) == 1560
    assert to_int32(2**31) == -(2**31) and to_int32(-1) == -1 and to_int32(2**32 + 7) == 7


def test_no_data_window_stays_initial():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    for i in range(10):
        limit = window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=True)
        assert limit == INITIAL_RECEIVE_WINDOW_COMPRESSED


def test_steady_flow_converges_to_multiplier_times_rate():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    limit = _warm_up(window)
    acked_compressed = (15 * BYTES_PER_PERIOD) >> COMPRESSED_SEQ_UNIT_LOG2
    assert abs((limit - acked_compressed) - MULTIPLIER * UNITS_PER_PERIOD) < 2


def test_steady_flow_rate_is_normalised_to_the_period():
    # The same data rate acked every 200 ms gives the same window as every 100 ms.
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    limit = 0
    for i in range(20):
        window.on_item_acked(2 * BYTES_PER_PERIOD)
        limit = window.update_and_get_send_seq_limit_compressed(START_NS + i * 2 * PERIOD_NS, True)
    assert abs((limit - compress_seq(window.acked_seq_bytes)) - MULTIPLIER * UNITS_PER_PERIOD) < 2


def test_first_call_makes_no_adjustment_even_with_data():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    window.on_item_acked(BYTES_PER_PERIOD)
    assert window.update_and_get_send_seq_limit_compressed(_at(0), True) == UNITS_PER_PERIOD + 800


def test_stalled_receiver_halves_window_to_zero_or_one():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    _warm_up(window)
    assert window.window_compressed >= 2990
    acked_compressed = compress_seq(window.acked_seq_bytes)
    previous = window.window_compressed
    limit = 0
    for i in range(15, 30):
        limit = window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=False)
        assert window.window_compressed <= previous // 2 + 1
        previous = window.window_compressed
    assert limit - acked_compressed in (0, 1)


def test_recovery_after_stall_with_one_large_ack():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    limit_before = _warm_up(window)
    acked_before = window.acked_seq_bytes
    for i in range(15, 30):
        window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=False)
    # everything the sender was allowed to send is processed within one period
    window.on_item_acked((limit_before << COMPRESSED_SEQ_UNIT_LOG2) - acked_before)
    limit_after = window.update_and_get_send_seq_limit_compressed(_at(30), receiver_buffer_empty=True)
    assert limit_after - compress_seq(window.acked_seq_bytes) >= MULTIPLIER * UNITS_PER_PERIOD


def test_idle_receiver_with_empty_buffer_does_not_shrink():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    _warm_up(window)
    before = window.window_compressed
    acked_compressed = compress_seq(window.acked_seq_bytes)
    for i in range(15, 40):
        limit = window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=True)
        assert limit == acked_compressed + before


def test_truncating_division_keeps_a_window_of_one():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    window.update_and_get_send_seq_limit_compressed(_at(0), receiver_buffer_empty=False)
    window.window_compressed = 1
    for i in range(1, 5):
        # target 0, diff -1: Java's -1 / 2 == 0 keeps 1, where Python's -1 // 2 would give 0
        assert window.update_and_get_send_seq_limit_compressed(_at(i), receiver_buffer_empty=False) == 1


def test_non_advancing_clock_makes_no_adjustment():
    window = ReceiveWindow(MULTIPLIER, PERIOD_NS)
    window.update_and_get_send_seq_limit_compressed(_at(0), True)
    window.on_item_acked(BYTES_PER_PERIOD)
    assert window.update_and_get_send_seq_limit_compressed(_at(0), True) == UNITS_PER_PERIOD + 800


def test_sender_before_first_ack_may_send_under_64_kib_then_stops():
    limit = SendLimit()
    assert limit.limit_compressed == 0
    footprint = chunk_footprint(1000, 1)
    sent = 0
    while limit.may_send(sent):
        sent += footprint
    assert 65_536 <= sent < 65_536 + footprint
    assert limit.may_send(65_535) and not limit.may_send(65_536)
    limit.on_ack(INITIAL_RECEIVE_WINDOW_COMPRESSED)
    assert limit.may_send(sent)
    assert limit.may_send(800 << 16) and not limit.may_send(801 << 16)


def test_a_lower_limit_replaces_a_higher_one():
    limit = SendLimit()
    limit.on_ack(100)
    limit.on_ack(10)
    assert not limit.may_send(11 << 16)


def test_send_limit_is_wrap_safe():
    limit = SendLimit()
    sent = (2**31 + 3) << 16          # compressed sequence past the int32 boundary
    limit.on_ack(to_int32(2**31 + 5))  # travels as a negative int32
    assert limit.limit_compressed < 0
    assert limit.may_send(sent)
    assert not limit.may_send((2**31 + 6) << 16)


def test_receive_window_limit_is_an_int32():
    window = ReceiveWindow()
    window.on_item_acked((2**31 - 10) << 16)
    limit = window.update_and_get_send_seq_limit_compressed(_at(0), True)
    assert limit == to_int32(2**31 - 10 + 800) and limit < 0
    sender = SendLimit()
    sender.on_ack(limit)
    assert sender.may_send((2**31 - 10 + 800) << 16) and not sender.may_send((2**31 - 9 + 800) << 16)


@pytest.mark.parametrize("kwargs, message", [
    ({"multiplier": 0}, "multiplier"), ({"period_ns": 0}, "period"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReceiveWindow(**kwargs)


@given(st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 10**9), st.booleans()), max_size=60))
def test_window_never_goes_negative(steps):
    window = ReceiveWindow()
    now = 0
    for acked, dt, empty in steps:
        window.on_item_acked(acked)
        now += dt
        window.update_and_get_send_seq_limit_compressed(now, empty)
        assert window.window_compressed >= 0
