"""Session windows against a plain-Python oracle."""

import logging
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core.aggregate import counting
from jet.core.processors import aggregate_to_session_window_p
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport
from jet.core.window_results import KeyedWindowResult, WindowResult
from jet.pipeline.aggregate_operations import AggregateOperations
from tests.core.stream_driver import FakeClock, StreamDriver

TIMEOUT = 10


def key_of(event):
    return event[0]


def session_oracle(inputs, timeout, keyed=True):
    """Expected output and late count: events below the last watermark are late; the others
    form, per key, sessions of events each at most ``timeout`` after the session's previous
    end (start .. last event + timeout). A session comes out before the first watermark above
    its end, or at the end of the input; between watermarks results are sorted by (end, key)."""
    last_wm, late, by_key = None, 0, {}
    for entry in inputs:
        if type(entry) is Watermark:
            last_wm = entry.timestamp
        elif last_wm is not None and entry[0] < last_wm:
            late += 1
        else:
            by_key.setdefault(entry[1][0] if keyed else None, []).append(entry[0])
    sessions = []
    for key, timestamps in by_key.items():
        timestamps.sort()
        start, end, count = timestamps[0], timestamps[0] + timeout, 0
        for ts in timestamps:
            if ts > end:
                sessions.append((start, end, key, count))
                start, count = ts, 0
            end, count = max(end, ts + timeout), count + 1
        sessions.append((start, end, key, count))
    sessions.sort(key=lambda s: (s[1], repr(s[2]), s[0]))

    def result(start, end, key, count):
        if keyed:
            return end - 1, KeyedWindowResult(start, end, key, count)
        return end - 1, WindowResult(start, end, count)

    output = []
    for entry in inputs:
        if type(entry) is Watermark:
            output.extend(result(*s) for s in sessions if s[1] < entry.timestamp)
            sessions = [s for s in sessions if s[1] >= entry.timestamp]
            output.append(entry)
    output.extend(result(*s) for s in sessions)
    return output, late


def by_segment(output):
    """Results sorted by (end, key, start) between watermarks."""
    normalized, segment = [], []
    for entry in output + [None]:
        if entry is None or type(entry) is Watermark:
            normalized.extend(sorted(segment, key=lambda e: (e[1].end, repr(getattr(e[1], "key", None)),
                                                             e[1].start)))
            segment = []
            if entry is not None:
                normalized.append(entry)
        else:
            segment.append(entry)
    return normalized


def events(*timestamps_and_keys):
    return [(ts, (key, n)) for n, (ts, key) in enumerate(timestamps_and_keys)]


# b: 30 and 50 are separate, 40 bridges them; a: 0..10 touch (end 10 == start 10)
STREAM = events((0, "a"), (30, "b"), (10, "a"), (50, "b")) + [Watermark(15)] + \
    events((5, "a"), (40, "b"), (61, "a")) + [Watermark(45)] + events((71, "a"), (20, "b")) + \
    [Watermark(90)] + events((95, "b"))


def test_sessions_merge_when_bridged_or_touching_and_close_on_watermarks():
    expected, late = session_oracle(STREAM, TIMEOUT)
    assert late == 2
    supplier = aggregate_to_session_window_p(TIMEOUT, key_of, counting())
    TestSupport.verify_processor(supplier).input(STREAM) \
        .output_checker(lambda exp, act: by_segment(act) == exp).expect_output(expected)
    driver = StreamDriver(supplier).feed(STREAM).complete()
    assert driver.processor.late_events_dropped == late
    output = driver.take()
    assert (19, KeyedWindowResult(0, 20, "a", 2)) in output        # 0 and 10 touch
    assert (59, KeyedWindowResult(30, 60, "b", 3)) in output       # 40 bridged 30 and 50


def test_global_sessions_give_window_results():
    expected, _ = session_oracle(STREAM, TIMEOUT, keyed=False)
    TestSupport.verify_processor(aggregate_to_session_window_p(TIMEOUT, None, counting())) \
        .input(STREAM).output_checker(lambda exp, act: by_segment(act) == exp).expect_output(expected)


def test_late_events_are_logged_at_info(caplog):
    driver = StreamDriver(aggregate_to_session_window_p(TIMEOUT, key_of, counting()))
    with caplog.at_level(logging.INFO):
        driver.feed(events((50, "a")) + [Watermark(40)] + events((39, "a"), (41, "b")))
    assert driver.processor.late_events_dropped == 1
    assert any("dropped 1 late event(s) behind watermark 40" in r.getMessage() for r in caplog.records)


def test_early_results_show_open_sessions():
    clock = FakeClock(0)
    driver = StreamDriver(aggregate_to_session_window_p(TIMEOUT, key_of, AggregateOperations.to_list(),
                                                        early_results_period_ms=50, clock_ms=clock))
    driver.process([(1, "a1"), (3, "a2"), (40, "b1")]).try_process()
    clock.now_ms = 50
    assert driver.try_process().take() == [
        (12, KeyedWindowResult(1, 13, "a", ["a1", "a2"], True)),
        (49, KeyedWindowResult(40, 50, "b", ["b1"], True))]
    driver.watermark(20)
    assert driver.take() == [(12, KeyedWindowResult(1, 13, "a", ["a1", "a2"])), Watermark(20)]


def test_a_session_window_needs_combine_and_a_positive_timeout():
    with pytest.raises(ValueError, match="has no combine function, which merging sessions needs"):
        aggregate_to_session_window_p(10, key_of, replace(counting(), combine=None))
    with pytest.raises(ValueError, match="session_timeout_ms must be an int > 0, got 0"):
        aggregate_to_session_window_p(0, key_of, counting())


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.sampled_from("ab"), st.integers(0, 30)),
                max_size=40),
       st.integers(1, 15))
def test_sessions_match_the_oracle_on_any_stream(entries, timeout):
    inputs, last_wm = [], None
    for n, (ts, key, lag) in enumerate(entries):
        inputs.append((ts, (key, n)))
        if lag % 4 == 0 and (last_wm is None or ts - lag > last_wm):
            last_wm = ts - lag
            inputs.append(Watermark(last_wm))
    expected, late = session_oracle(inputs, timeout)
    driver = StreamDriver(aggregate_to_session_window_p(timeout, key_of, counting()))
    assert by_segment(driver.feed(inputs).complete().take()) == expected
    assert driver.processor.late_events_dropped == late


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.sampled_from("abc")), max_size=60), st.integers(1, 15),
       st.integers(1, 7))
def test_chunks_of_out_of_order_events_gather_each_sessions_items(entries, timeout, chunk_size):
    """Every event in one of its key's sessions, whatever the order and the chunking (the
    processor folds a chunk in one loop, most events into a key's only window)."""
    pairs = [(ts, (key, n)) for n, (ts, key) in enumerate(entries)]
    driver = StreamDriver(aggregate_to_session_window_p(timeout, key_of, AggregateOperations.to_list()))
    for start in range(0, len(pairs), chunk_size):
        driver.process(pairs[start:start + chunk_size])
    actual = sorted((r.key, r.start, r.end, sorted(r.result)) for _ts, r in driver.complete().take())
    expected = []
    for key in sorted({key for _ts, key in entries}):
        mine = sorted((ts, item) for ts, item in pairs if item[0] == key)
        sessions = []
        for ts, item in mine:
            if sessions and ts <= sessions[-1][2]:
                sessions[-1][2] = max(sessions[-1][2], ts + timeout)
                sessions[-1][3].append(item)
            else:
                sessions.append([key, ts, ts + timeout, [item]])
        expected += [(k, s, e, sorted(items)) for k, s, e, items in sessions]
    assert actual == sorted(expected)


def test_sessions_at_the_end_of_time_are_clamped():
    from jet.core.special_items import MAX_TIMESTAMP
    driver = StreamDriver(aggregate_to_session_window_p(TIMEOUT, key_of, counting()))
    driver.process([(MAX_TIMESTAMP - 3, ("a", 0)), (MAX_TIMESTAMP - 12, ("a", 1)), (MAX_TIMESTAMP, ("a", 2))])
    assert driver.complete().take() == [(MAX_TIMESTAMP - 1, KeyedWindowResult(MAX_TIMESTAMP - 12, MAX_TIMESTAMP, "a", 3))]
