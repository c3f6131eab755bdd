"""Tumbling and sliding windows (one and two stages) against a plain-Python oracle."""

import logging
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core.aggregate import AggregateOperation, counting, summing
from jet.core.processors import (accumulate_by_frame_p, aggregate_to_sliding_window_p,
                                 combine_to_sliding_window_p)
from jet.core.sliding_window_policy import sliding_win_policy, tumbling_win_policy
from jet.core.snapshot_keys import BroadcastKey
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport
from jet.core.window_results import KeyedWindowResult, WindowResult
from jet.pipeline.aggregate_operations import AggregateOperations
from tests.core.stream_driver import FakeClock, StreamDriver


def key_of(event):
    return event[0]


def window_oracle(inputs, size, slide, keyed=True, stage_one=False):
    """What the window stage must emit, computed directly from the events.

    An event is late when its frame (ending at the next slide boundary above it) is below the
    frame of the last watermark; every other event counts in each window [start, start + size)
    that holds it. A window comes out at the first watermark at or past its end (before that
    watermark), or at the end of the input. Returns the output as segments split at the
    watermarks, each sorted by window end and key, and the number of late events.
    """
    def frame_end(ts):
        return ts - ts % slide + slide

    counts, last_wm, late = Counter(), None, 0
    for entry in inputs:
        if type(entry) is Watermark:
            last_wm = entry.timestamp
            continue
        ts, event = entry
        if last_wm is not None and frame_end(ts) < frame_end(last_wm):
            late += 1
            continue
        first_start = ts - ts % slide - size + slide
        for start in range(first_start, ts + 1, slide):
            counts[(start, event[0] if keyed else None)] += 1

    def result(start, key, count):
        end = start + size
        if stage_one:
            return key, end, count
        if keyed:
            return end - 1, KeyedWindowResult(start, end, key, count)
        return end - 1, WindowResult(start, end, count)

    pending = sorted(counts.items(), key=lambda entry: (entry[0][0], repr(entry[0][1])))
    output = []
    for entry in inputs:
        if type(entry) is Watermark:
            due = [e for e in pending if e[0][0] + size <= entry.timestamp]
            pending = [e for e in pending if e[0][0] + size > entry.timestamp]
            output.extend(result(start, key, count) for (start, key), count in due)
            output.append(entry)
    output.extend(result(start, key, count) for (start, key), count in pending)
    return output, late


def is_partial(entry):
    """A stage-one ``(key, frame end, accumulator)`` tuple, not a ``(ts, result)`` pair."""
    return type(entry) is tuple and len(entry) == 3


def end_of(entry):
    return entry[1] if is_partial(entry) else entry[1].end


def sort_key(entry):
    if is_partial(entry):
        return entry[1], repr(entry[0])
    return entry[1].end, repr(getattr(entry[1], "key", None))


def by_segment(output):
    """Window results sorted by (end, key) between watermarks; checks they come by end."""
    normalized, segment = [], []
    for entry in output + [None]:
        if entry is None or type(entry) is Watermark:
            ends = [end_of(e) for e in segment]
            assert ends == sorted(ends), f"results not in window-end order: {segment}"
            normalized.extend(sorted(segment, key=sort_key))
            segment = []
            if entry is not None:
                normalized.append(entry)
        else:
            segment.append(entry)
    return normalized


def matches(expected, actual):
    return by_segment(actual) == expected


def events(*timestamps_and_keys):
    return [(ts, (key, n)) for n, (ts, key) in enumerate(timestamps_and_keys)]


OUT_OF_ORDER = events((1, "a"), (0, "b"), (3, "a"), (2, "a")) + [Watermark(2)] + \
    events((5, "b"), (1, "a"), (2, "b"), (4, "a")) + [Watermark(5)] + \
    events((3, "a"), (7, "a"), (6, "b"), (9, "b")) + [Watermark(8)] + events((12, "a"))


@pytest.mark.parametrize("size, slide", [(2, 2), (4, 2), (6, 2), (3, 1)])
def test_single_stage_matches_the_oracle_with_late_events_dropped(size, slide):
    expected, late = window_oracle(OUT_OF_ORDER, size, slide)
    assert late > 0
    supplier = aggregate_to_sliding_window_p(key_of, sliding_win_policy(size, slide), counting())
    TestSupport.verify_processor(supplier).input(OUT_OF_ORDER).output_checker(matches) \
        .expect_output(expected)
    driver = StreamDriver(supplier).feed(OUT_OF_ORDER).complete()
    assert driver.processor.late_events_dropped == late


@pytest.mark.parametrize("size, slide", [(2, 2), (4, 2), (3, 1)])
def test_two_stages_match_the_oracle(size, slide):
    policy = sliding_win_policy(size, slide)
    frames, _ = window_oracle(OUT_OF_ORDER, slide, slide, stage_one=True)
    TestSupport.verify_processor(accumulate_by_frame_p(key_of, policy, counting())) \
        .input(OUT_OF_ORDER).output_checker(matches).expect_output(frames)
    stage_one = StreamDriver(accumulate_by_frame_p(key_of, policy, counting()))
    stage_one_output = stage_one.feed(OUT_OF_ORDER).complete().take()
    expected, late = window_oracle(OUT_OF_ORDER, size, slide)
    TestSupport.verify_processor(combine_to_sliding_window_p(policy, counting(), keyed=True)) \
        .input(stage_one_output).output_checker(matches).expect_output(expected)
    assert stage_one.processor.late_events_dropped == late


def test_non_keyed_windows_give_window_results():
    policy = sliding_win_policy(4, 2)
    expected, _ = window_oracle(OUT_OF_ORDER, 4, 2, keyed=False)
    TestSupport.verify_processor(aggregate_to_sliding_window_p(None, policy, counting())) \
        .input(OUT_OF_ORDER).output_checker(matches).expect_output(expected)
    stage_one = StreamDriver(accumulate_by_frame_p(None, policy, counting()))
    frames = stage_one.feed(OUT_OF_ORDER).complete().take()
    assert all(type(r) is tuple and r[0] is None for r in frames if type(r) is not Watermark)
    TestSupport.verify_processor(combine_to_sliding_window_p(policy, counting(), keyed=False)) \
        .input(frames).output_checker(matches).expect_output(expected)


@pytest.mark.parametrize("operation", [counting(), summing(lambda e: e[1]),
                                       AggregateOperations.averaging(lambda e: e[1]),
                                       AggregateOperations.all_of(counting(), summing(lambda e: e[1]))])
def test_sliding_with_and_without_deduct_agree(operation):
    assert operation.deduct is not None
    policy = sliding_win_policy(6, 2)
    with_deduct = StreamDriver(aggregate_to_sliding_window_p(key_of, policy, operation))
    without = StreamDriver(aggregate_to_sliding_window_p(key_of, policy, replace(operation, deduct=None)))
    expected = by_segment(without.feed(OUT_OF_ORDER).complete().take())
    assert by_segment(with_deduct.feed(OUT_OF_ORDER).complete().take()) == expected
    oracle_output, _ = window_oracle(OUT_OF_ORDER, 6, 2)
    assert len(expected) == len(oracle_output)  # the same windows, whatever the operation


def test_early_results_report_open_windows_without_changing_them():
    clock = FakeClock(0)
    driver = StreamDriver(aggregate_to_sliding_window_p(
        key_of, sliding_win_policy(4, 2), counting(), early_results_period_ms=100, clock_ms=clock))
    driver.process(events((0, "a"), (1, "a"), (3, "b"))).try_process()
    assert driver.take() == []
    early = [(1, KeyedWindowResult(-2, 2, "a", 2, True)), (3, KeyedWindowResult(0, 4, "a", 2, True)),
             (3, KeyedWindowResult(0, 4, "b", 1, True)), (5, KeyedWindowResult(2, 6, "b", 1, True))]
    clock.now_ms = 100
    assert driver.try_process().take() == early
    clock.now_ms = 150
    assert driver.try_process().take() == []
    clock.now_ms = 200
    assert driver.try_process().take() == early
    driver.watermark(4)
    assert driver.take() == [(1, KeyedWindowResult(-2, 2, "a", 2)), (3, KeyedWindowResult(0, 4, "a", 2)),
                             (3, KeyedWindowResult(0, 4, "b", 1)), Watermark(4)]
    clock.now_ms = 300
    assert driver.try_process().take() == [(5, KeyedWindowResult(2, 6, "b", 1, True))]


def test_early_results_export_a_copy_of_the_accumulator():
    clock = FakeClock(0)
    driver = StreamDriver(aggregate_to_sliding_window_p(
        key_of, tumbling_win_policy(10), AggregateOperations.to_list(), early_results_period_ms=1,
        clock_ms=clock))
    driver.process([(1, ("a", 0))]).try_process()
    clock.now_ms = 1
    (_, early), = driver.try_process().take()
    driver.process([(2, ("a", 1))]).complete()
    (_, final), = driver.take()
    assert early.result == [("a", 0)] and final.result == [("a", 0), ("a", 1)]


def test_late_events_are_counted_and_logged_at_info_at_most_once_a_second(caplog):
    driver = StreamDriver(aggregate_to_sliding_window_p(key_of, tumbling_win_policy(2), counting()))
    driver.process(events((5, "a"))).watermark(10)
    with caplog.at_level(logging.INFO):
        driver.process(events((3, "a"), (9, "a"), (10, "a"))).process(events((1, "b")))
    assert driver.processor.late_events_dropped == 3
    infos = [r for r in caplog.records if r.levelno == logging.INFO and "late" in r.getMessage()]
    assert len(infos) == 1
    assert "dropped 2 late event(s) behind watermark 10" in infos[0].getMessage()


def test_a_watermark_far_ahead_costs_nothing_per_empty_frame():
    driver = StreamDriver(aggregate_to_sliding_window_p(key_of, sliding_win_policy(2_000, 1), counting()))
    driver.process(events((0, "a"))).watermark(10**15)
    output = driver.take()
    assert len(output) == 2_001 and output[-1] == Watermark(10**15)


def test_two_stages_need_a_combine_function():
    no_combine = replace(counting(), combine=None)
    with pytest.raises(ValueError, match="aggregate 'counting' has no combine function"):
        combine_to_sliding_window_p(tumbling_win_policy(10), no_combine)
    with pytest.raises(ValueError, match="has no combine function"):
        aggregate_to_sliding_window_p(None, sliding_win_policy(4, 2), no_combine)
    aggregate_to_sliding_window_p(None, tumbling_win_policy(4), no_combine)  # tumbling: fine


stream_entries = st.lists(st.tuples(st.integers(-10, 60), st.sampled_from("abc"),
                                    st.integers(0, 12)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(stream_entries, st.sampled_from([(2, 2), (4, 2), (6, 3), (5, 1)]))
def test_windows_match_the_oracle_on_any_stream(entries, size_and_slide):
    size, slide = size_and_slide
    inputs, last_wm = [], None
    for n, (ts, key, lag) in enumerate(entries):
        inputs.append((ts, (key, n)))
        if lag % 3 == 0 and (last_wm is None or ts - lag > last_wm):
            last_wm = ts - lag
            inputs.append(Watermark(last_wm))
    expected, late = window_oracle(inputs, size, slide)
    policy = sliding_win_policy(size, slide)
    single = StreamDriver(aggregate_to_sliding_window_p(key_of, policy, counting()))
    assert by_segment(single.feed(inputs).complete().take()) == expected
    assert single.processor.late_events_dropped == late
    stage_one = StreamDriver(accumulate_by_frame_p(key_of, policy, counting()))
    stage_two = StreamDriver(combine_to_sliding_window_p(policy, counting()))
    stage_two.feed(stage_one.feed(inputs).complete().take()).complete()
    assert by_segment(stage_two.take()) == expected


def _counting_finishes(finished: list) -> AggregateOperation:
    """Counting whose ``finish`` records each call, to see when results are made."""
    base = counting()

    def finish(acc):
        finished.append(acc)
        return base.finish(acc)
    return AggregateOperation(base.create, base.accumulate, base.combine, finish, name="counting")


def test_a_closing_tumbling_window_makes_its_results_as_the_outbox_takes_them():
    finished: list = []
    keys = 500
    driver = StreamDriver(aggregate_to_sliding_window_p(key_of, tumbling_win_policy(10), _counting_finishes(finished)),
                          capacity=7)
    driver.process([(ts, (key, ts)) for key in range(keys) for ts in (1, 2 + key % 5)])
    assert driver.processor.try_process_watermark(Watermark(10)) is False  # the outbox refused
    assert len(finished) <= 2 * 7  # not every result made at once
    driver.watermark(10)
    output = driver.take()
    assert output[-1] == Watermark(10)
    results = Counter((r.end, r.key, r.result) for _, r in output[:-1])
    assert results == Counter((10, key, 2) for key in range(keys))
    assert len(finished) == keys


def test_a_snapshot_while_a_tumbling_window_closes_emits_every_result_first():
    keys = 300
    supplier = aggregate_to_sliding_window_p(key_of, tumbling_win_policy(10), counting())
    driver = StreamDriver(supplier, capacity=5)
    driver.process([(ts, (key, ts)) for key in range(keys) for ts in (1, 3)] + [(12, ("next", 12))])
    assert driver.processor.try_process_watermark(Watermark(10)) is False
    driver._until_true(driver.processor.save_to_snapshot)  # finishes the output, then saves
    emitted = [entry[1] for entry in driver.take() if type(entry) is not Watermark]
    assert Counter((r.key, r.result) for r in emitted) == Counter((key, 2) for key in range(keys))
    saved = driver.outbox.snapshot_entries
    assert [key for key, _ in saved if type(key) is not BroadcastKey] == ["next"]  # only the open window's key
    driver.watermark(10)
    assert driver.take() == [Watermark(10)]  # nothing emitted twice
