"""The processors of several inputs against plain-Python oracles: co-grouped windows (first
stage, single stage, sessions) and the interval join, through the harness's snapshots, a
restore into another processor count, late events and the interval join's eviction."""

from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from jet.core.aggregate import counting
from jet.core.co_aggregate import co_aggregate
from jet.core.partitioner import murmur_partition
from jet.core.processors import combine_to_sliding_window_p
from jet.core.processors.co_group import (co_accumulate_by_frame_p, co_aggregate_to_session_window_p,
                                          co_aggregate_to_sliding_window_p)
from jet.core.processors.interval_join import interval_join_p
from jet.core.sliding_window_policy import sliding_win_policy
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport
from jet.core.window_results import KeyedWindowResult
from jet.pipeline.aggregate_operations import AggregateOperations

from tests.core.snapshot_driver import Driven, context_of, restore_all

key_of = lambda item: item[0]  # noqa: E731
COUNT2 = co_aggregate((counting(), counting()))
EVENTS = st.lists(st.tuples(st.integers(0, 40), st.sampled_from("abc")), max_size=25)
COUNTS = st.sampled_from([(3, 2), (2, 3), (1, 2), (2, 1)])


def pairs(events, tag):
    """``(ts, (key, tag))`` pairs of ``(ts, key)`` events."""
    return [(ts, (key, tag)) for ts, key in events]


def tumbling_oracle(left, right, size):
    counts = Counter()
    for ordinal, events in enumerate((left, right)):
        for ts, key in events:
            counts[(ts - ts % size, key, ordinal)] += 1
    windows = {(start, key) for start, key, _ in counts}
    return sorted((start + size - 1, KeyedWindowResult(start, start + size, key,
                                                       (counts[(start, key, 0)], counts[(start, key, 1)])))
                  for start, key in windows)


def interval_oracle(left, right, lower, upper):
    return sorted((max(a[0], b[0]), (a[1], b[1])) for a in left for b in right
                  if a[1][0] == b[1][0] and a[0] - lower <= b[0] <= a[0] + upper)


def test_co_aggregation_folds_each_input_into_its_part_and_combines_part_wise():
    op = co_aggregate((counting(), AggregateOperations.to_list()), finish_fn=lambda t: {"n": t[0], "items": t[1]})
    acc = op.for_input(0).fold_chunk(op.create(), ["x", "y"])
    acc = op.for_input(1).accumulate(acc, "z")
    other = op.accumulate(op.create(), (1, "w"))
    assert op.finish(op.combine(acc, other)) == {"n": 2, "items": ["z", "w"]}
    assert op.deduct is None and COUNT2.deduct(COUNT2.combine([3, 1], [1, 1]), [1, 1]) == [3, 1]
    accs = {}
    COUNT2.for_input(1).fold_keyed_chunk(accs, key_of, ["ab", "ac", "bd"])
    assert accs == {"a": [0, 2], "b": [0, 1]}


@settings(max_examples=30, deadline=None)
@given(EVENTS, EVENTS)
def test_single_stage_and_two_stages_match_the_oracle_through_snapshots(left, right):
    policy = sliding_win_policy(10, 10)
    inputs = [pairs(left, "l"), pairs(right, "r")]
    expected = tumbling_oracle(left, right, 10)
    checker = lambda exp, act: sorted(act) == exp  # noqa: E731
    TestSupport.verify_processor(co_aggregate_to_sliding_window_p((key_of, key_of), policy, COUNT2)) \
        .inputs(inputs).output_checker(checker).expect_output(expected)
    first = Driven(co_accumulate_by_frame_p((key_of, key_of), policy, COUNT2), context_of(0, 1))
    first.process(inputs[0], 0).process(inputs[1], 1).complete()
    second = Driven(combine_to_sliding_window_p(policy, COUNT2), context_of(0, 1))
    assert sorted(second.process(first.output).complete().output) == expected


@settings(max_examples=30, deadline=None)
@given(EVENTS, EVENTS, COUNTS)
def test_co_grouped_frames_restored_into_another_count_count_every_event_once(left, right, counts):
    policy = sliding_win_policy(10, 10)
    supplier = co_accumulate_by_frame_p((key_of, key_of), policy, COUNT2)
    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for i, driven in enumerate(old):
        driven.process(pairs(left[i::counts[0]], "l"), 0)
    new = restore_all(supplier, [d.save() for d in old], counts[1])
    for i, driven in enumerate(new):
        driven.process(pairs(right[i::counts[1]], "r"), 1).complete()
    frames = [result for driven in old + new for result in driven.output]
    combined = Driven(combine_to_sliding_window_p(policy, COUNT2), context_of(0, 1)).process(frames).complete()
    assert sorted(combined.output) == tumbling_oracle(left, right, 10)


def test_co_grouped_sessions_merge_across_inputs_and_count_late_events():
    supplier = co_aggregate_to_session_window_p(10, (key_of, key_of), COUNT2)
    TestSupport.verify_processor(supplier).inputs([pairs([(1, "a"), (30, "a")], "l"), pairs([(8, "a"), (15, "b")], "r")]) \
        .output_checker(lambda exp, act: sorted(act) == exp) \
        .expect_output(sorted([(17, KeyedWindowResult(1, 18, "a", (1, 1))), (39, KeyedWindowResult(30, 40, "a", (1, 0))),
                               (24, KeyedWindowResult(15, 25, "b", (0, 1)))]))
    driven = Driven(supplier, context_of(0, 1))
    driven.process(pairs([(50, "a")], "l"), 0).watermark(45).process(pairs([(40, "a"), (46, "a")], "r"), 1)
    assert driven.processor.late_events_dropped == 1
    assert driven.complete().output[-1] == (59, KeyedWindowResult(46, 60, "a", (1, 1)))


def test_a_late_event_of_either_input_is_dropped_and_counted():
    driven = Driven(co_aggregate_to_sliding_window_p((key_of, key_of), sliding_win_policy(10, 10), COUNT2),
                    context_of(0, 1))
    driven.process(pairs([(12, "a")], "l"), 0).watermark(20)
    driven.process(pairs([(5, "a"), (25, "a")], "l"), 0).process(pairs([(19, "a"), (21, "a")], "r"), 1)
    assert driven.processor.late_events_dropped == 2
    assert [r for r in driven.complete().output if not isinstance(r, Watermark)] == [
        (19, KeyedWindowResult(10, 20, "a", (1, 0))), (29, KeyedWindowResult(20, 30, "a", (1, 1)))]


@settings(max_examples=40, deadline=None)
@given(EVENTS, EVENTS, st.integers(0, 8), st.integers(0, 8))
def test_interval_join_matches_the_oracle_through_snapshots(left, right, lower, upper):
    inputs = [pairs(left, "l"), pairs(right, "r")]
    TestSupport.verify_processor(interval_join_p(key_of, key_of, lower, upper, lambda a, b: (a, b))) \
        .inputs(inputs).output_checker(lambda exp, act: sorted(act) == exp) \
        .expect_output(interval_oracle(*inputs, lower, upper))


@settings(max_examples=40, deadline=None)
@given(EVENTS, EVENTS, COUNTS)
def test_interval_join_buffers_restored_into_another_count_join_every_pair_once(left, right, counts):
    left, right = pairs(left, "l"), pairs(right, "r")
    supplier = interval_join_p(key_of, key_of, 3, 5, lambda a, b: (a, b))

    def share(items, index, count):  # as the partitioned edge splits them
        return [pair for pair in items if murmur_partition(pair[1][0]) % count == index]

    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for i, driven in enumerate(old):
        driven.process(share(left, i, counts[0]), 0)
    new = restore_all(supplier, [d.save() for d in old], counts[1])
    for i, driven in enumerate(new):
        driven.process(share(right, i, counts[1]), 1).complete()
    assert sorted(item for d in old + new for item in d.output) == interval_oracle(left, right, 3, 5)


@settings(max_examples=40, deadline=None)
@given(EVENTS, EVENTS, COUNTS, st.sampled_from([0, 1]), st.lists(st.integers(0, 20), min_size=3, max_size=3))
@example([(18, "a")], [(21, "a"), (19, "a")], (2, 3), 0, [0, 12, 0])  # a saved broadcast item meets a later one
def test_a_broadcast_side_joins_every_pair_once_through_a_restore_into_another_count(left, right, counts, broadcast,
                                                                                      watermarks):
    """Every processor takes every item of the broadcast side and some of the other; before the
    save each has its own watermark (none above the later items)."""
    sides = [pairs(left, "l"), pairs(right, "r")]
    supplier = interval_join_p(key_of, key_of, 3, 5, lambda a, b: (a, b), broadcast)

    def share(items, index, count, phase):
        items = [pair for pair in items if (pair[0] < 20) == (phase == 1)]
        return [pair for n, pair in enumerate(items) if n % count == index]

    def feed(driven, index, count, phase):
        for ordinal in (0, 1):
            everything = ordinal == broadcast
            driven.process(share(sides[ordinal], 0 if everything else index, 1 if everything else count, phase),
                           ordinal)

    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for i, driven in enumerate(old):
        feed(driven, i, counts[0], 1)
        driven.watermark(watermarks[i])
    new = restore_all(supplier, [d.save() for d in old], counts[1])
    for i, driven in enumerate(new):
        feed(driven, i, counts[1], 2)
        driven.complete()
    joined = [item for d in old + new for item in d.output if not isinstance(item, Watermark)]
    assert sorted(joined) == interval_oracle(*sides, 3, 5)


def test_a_restore_keeps_the_broadcast_copy_of_the_processor_with_the_lowest_watermark():
    supplier = interval_join_p(key_of, key_of, 0, 5, lambda a, b: (a, b), 0)
    lefts = [(ts, ("k", f"l{ts}")) for ts in (10, 20, 30)]
    old = [Driven(supplier, context_of(i, 2)).process(lefts, 0) for i in range(2)]
    old[0].process([(31, ("k", "r31"))], 1)
    old[0].watermark(26)  # evicts l10, l20 here (nothing at or above 26 can meet them)
    old[1].watermark(16)  # only l10 here
    (restored,) = restore_all(supplier, [d.save() for d in old], 1)
    assert restored.processor.current_watermark == 16
    left_side, right_side = restored.processor.buffers["k"]
    assert left_side.pairs() == lefts[1:] and right_side.pairs() == [(31, ("k", "r31"))]
    restored.process([(22, ("k", "r22"))], 1)
    assert restored.output == [(22, (lefts[1][1], ("k", "r22")))]


def test_the_watermark_evicts_what_can_match_nothing_more_and_late_items_are_counted():
    driven = Driven(interval_join_p(key_of, key_of, 2, 5, lambda a, b: (a[1], b[1])), context_of(0, 1))
    driven.process([(10, ("k", "l10")), (20, ("k", "l20"))], 0).process([(12, ("k", "r12"))], 1)
    assert driven.processor.buffered == 3
    driven.watermark(16)  # l10 can meet rights up to 15; r12 lefts up to 14: both gone
    assert driven.processor.buffered == 1
    driven.process([(15, ("k", "r15")), (18, ("k", "r18"))], 1).process([(14, ("k", "l14"))], 0)
    assert driven.processor.late_events_dropped == 2
    driven.watermark(1000)
    assert driven.processor.buffered == 0 and not driven.processor.buffers
    assert [x for x in driven.output if not isinstance(x, Watermark)] == [(12, ("l10", "r12")), (20, ("l20", "r18"))]


def test_early_results_of_co_grouped_windows_and_sessions():
    from tests.core.stream_driver import FakeClock
    lists = co_aggregate((AggregateOperations.to_list(), counting()))
    for supplier_of in (lambda clock: co_aggregate_to_sliding_window_p((key_of, key_of), sliding_win_policy(10, 10),
                                                                        lists, 100, clock),
                        lambda clock: co_aggregate_to_session_window_p(10, (key_of, key_of), lists, 100, clock)):
        clock = FakeClock(0)
        driven = Driven(supplier_of(clock), context_of(0, 1))
        driven.process(pairs([(1, "a")], "l"), 0).process(pairs([(2, "a")], "r"), 1).try_process()
        clock.now_ms = 100
        (_, early), = driven.try_process().output
        driven.process(pairs([(3, "a")], "l"), 0).complete()
        (_, final) = driven.output[-1]
        assert early.is_early and early.result == ([("a", "l")], 1)
        assert not final.is_early and final.result == ([("a", "l"), ("a", "l")], 1)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 12), st.sampled_from("ab")), max_size=40),
       st.integers(-3, 4), st.integers(-3, 4), st.integers(1, 4))
def test_interval_join_at_the_bounds_in_any_order_and_chunking(events, lower, upper, chunk_size):
    """Equal timestamps, items exactly at ``a.ts - lower`` and ``a.ts + upper``, a one-sided
    interval (a negative bound), out-of-order arrivals and the two inputs interleaved chunk by
    chunk; a mapper's None is dropped."""
    if lower + upper < 0:
        lower, upper = upper, -upper + abs(lower)
    tagged = [(ts, (key, ("l" if side == 0 else "r") + str(n))) for n, (side, ts, key) in enumerate(events)]
    sides = [[pair for pair, (side, _ts, _key) in zip(tagged, events) if side == s] for s in (0, 1)]
    mapper = lambda a, b: None if a[1][-1] == "3" else (a, b)  # noqa: E731
    driven = Driven(interval_join_p(key_of, key_of, lower, upper, mapper), context_of(0, 1))
    for start in range(0, len(tagged), chunk_size):
        for ordinal in (0, 1):
            chunk = [pair for pair in tagged[start:start + chunk_size] if pair in sides[ordinal]]
            if chunk:
                driven.process(chunk, ordinal)
    expected = [entry for entry in interval_oracle(*sides, lower, upper) if entry[1][0][1][-1] != "3"]
    assert sorted(driven.complete().output) == expected
