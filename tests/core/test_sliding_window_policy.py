import pytest

from jet.core.sliding_window_policy import (SlidingWindowPolicy, sliding_win_policy,
                                            tumbling_win_policy)
from jet.core.special_items import MAX_TIMESTAMP, MIN_TIMESTAMP


def test_frames_are_labelled_by_their_end_and_aligned_to_the_epoch():
    policy = sliding_win_policy(4, 2)
    assert [policy.higher_frame_ts(t) for t in (-3, -2, -1, 0, 1, 2, 3)] == [-2, 0, 0, 2, 2, 4, 4]
    assert [policy.floor_frame_ts(t) for t in (-3, -2, -1, 0, 1, 2, 3)] == [-4, -2, -2, 0, 0, 2, 2]
    assert not policy.is_tumbling()
    assert tumbling_win_policy(5).is_tumbling()


def test_offset_shifts_frame_boundaries():
    policy = SlidingWindowPolicy(frame_size=10, frame_offset=3, window_size=10)
    assert [policy.floor_frame_ts(t) for t in (2, 3, 12, 13, -7, -8)] == [-7, 3, 3, 13, -7, -17]
    assert policy.higher_frame_ts(3) == 13


def test_arithmetic_clamps_at_the_int64_bounds():
    policy = tumbling_win_policy(1000)
    assert policy.floor_frame_ts(MIN_TIMESTAMP) == MIN_TIMESTAMP
    assert policy.higher_frame_ts(MAX_TIMESTAMP) == MAX_TIMESTAMP
    assert policy.higher_frame_ts(MAX_TIMESTAMP - 1) == MAX_TIMESTAMP


def test_to_tumbling_by_frame_keeps_frames():
    policy = sliding_win_policy(6, 2).to_tumbling_by_frame()
    assert (policy.frame_size, policy.window_size, policy.is_tumbling()) == (2, 2, True)


@pytest.mark.parametrize("call, message", [
    (lambda: sliding_win_policy(5, 2), "size_ms must be a positive multiple of slide_ms = 2, got size_ms = 5"),
    (lambda: sliding_win_policy(4, 0), "slide_ms must be > 0, got 0"),
    (lambda: tumbling_win_policy(-1), "size_ms must be > 0, got -1"),
    (lambda: SlidingWindowPolicy(10, 10, 10), r"frame_offset must be in \[0, frame_size = 10\), got 10"),
    (lambda: SlidingWindowPolicy(10, 0, 15), "window_size must be a positive multiple of frame_size = 10, got 15"),
])
def test_bad_policies_are_refused_naming_the_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_non_int_sizes_are_refused():
    with pytest.raises(TypeError, match="size_ms must be an int"):
        tumbling_win_policy(1.5)
