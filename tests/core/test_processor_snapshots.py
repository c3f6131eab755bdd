"""Every built-in stateful processor saves its state and a restore into another number of
processors gives the result of a plain-Python oracle."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings, strategies as st

from jet.core.aggregate import AggregateOperation, counting, summing
from jet.core.event_time import EventTimePolicy
from jet.core.partitioner import murmur_partition
from jet.core.processors import (accumulate_by_key_p, accumulate_p, aggregate_by_key_p,
                                 aggregate_to_session_window_p, aggregate_to_sliding_window_p,
                                 combine_by_key_p, combine_p, insert_watermarks_p, transform_stateful_p)
from jet.core.sliding_window_policy import sliding_win_policy
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport
from jet.core.window_results import KeyedWindowResult
from jet.pipeline.join_processors import HashJoinCollectP, HashJoinP
from tests.core.snapshot_driver import Driven, context_of, restore_all
from tests.core.stream_driver import FakeClock

WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), max_size=40)
COUNTS = st.sampled_from([(3, 2), (2, 3), (1, 2), (2, 1)])


def by_partition(items, count, key=lambda item: item):
    """Items split as a partitioned edge of ``count`` processors splits them."""
    shares = [[] for _ in range(count)]
    for item in items:
        shares[murmur_partition(key(item)) % count].append(item)
    return shares


def run_restored(supplier, before, after, counts, key=lambda item: item):
    """Feed ``before`` to counts[0] processors, snapshot, restore into counts[1], feed ``after``,
    complete; everything emitted, in one list."""
    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for driven, share in zip(old, by_partition(before, counts[0], key)):
        driven.process(share)
    saved = [driven.save() for driven in old]
    new = restore_all(supplier, saved, counts[1])
    for driven, share in zip(new, by_partition(after, counts[1], key)):
        driven.process(share).complete()
    return [item for driven in old + new for item in driven.output]


# -- grouped aggregation ------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(WORDS, WORDS, COUNTS)
def test_grouped_aggregation_restored_into_another_parallelism_counts_every_word_once(before, after, counts):
    output = run_restored(aggregate_by_key_p(lambda w: w, counting()), before, after, counts)
    assert sorted(output) == sorted(Counter(before + after).items())


@settings(max_examples=30, deadline=None)
@given(WORDS, WORDS, COUNTS)
def test_two_stage_grouped_aggregation_states_merge_by_combine(before, after, counts):
    # stage one is fed round-robin (a local edge), so one word may sit in every processor
    old = [Driven(accumulate_by_key_p(lambda w: w, counting()), context_of(i, counts[0]))
           for i in range(counts[0])]
    for i, driven in enumerate(old):
        driven.process(before[i::counts[0]])
    new = restore_all(accumulate_by_key_p(lambda w: w, counting()), [d.save() for d in old], counts[1])
    for i, driven in enumerate(new):
        driven.process(after[i::counts[1]]).complete()
    partials = [entry for driven in old + new for entry in driven.output]
    combined = Driven(combine_by_key_p(counting()), context_of(0, 1)).process(partials).complete()
    assert sorted(combined.output) == sorted(Counter(before + after).items())


def test_grouped_aggregation_passes_the_harness_with_snapshots():
    words = list("abracadabra")
    TestSupport.verify_processor(aggregate_by_key_p(lambda w: w, summing(len))).input(words) \
        .output_checker(TestSupport.SAME_ITEMS_ANY_ORDER).expect_output(Counter(words).items())
    TestSupport.verify_processor(combine_by_key_p(counting())).inputs([[("a", 2), ("b", 1)], [("a", 5)]]) \
        .output_checker(TestSupport.SAME_ITEMS_ANY_ORDER).expect_output([("a", 7), ("b", 1)])


def test_a_key_restored_twice_without_a_combine_names_the_vertex():
    no_combine = AggregateOperation(create=list, accumulate=lambda acc, x: acc + [x], name="listing")
    saved = [[("k", [1])], [("k", [2])]]
    with pytest.raises(ValueError, match="vertex 'vertex'.*key 'k'.*'listing' has no combine"):
        restore_all(aggregate_by_key_p(lambda x: "k", no_combine), saved, 1)


# -- global aggregation -------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=30), st.lists(st.integers(-50, 50), max_size=30), COUNTS)
def test_global_accumulate_stage_keeps_its_share_of_every_saved_partial(before, after, counts):
    old = [Driven(accumulate_p(summing()), context_of(i, counts[0])) for i in range(counts[0])]
    for i, driven in enumerate(old):
        driven.process(before[i::counts[0]])
    new = restore_all(accumulate_p(summing()), [d.save() for d in old], counts[1])
    for i, driven in enumerate(new):
        driven.process(after[i::counts[1]]).complete()
    partials = [x for driven in new for x in driven.output]
    assert len(partials) == counts[1] and sum(partials) == sum(before + after)


def test_global_combine_state_goes_to_the_processor_the_all_to_one_edge_feeds():
    old = Driven(combine_p(summing()), context_of(0, 1)).process([5, 6])
    new = restore_all(combine_p(summing()), [old.save()], 3)
    owner = murmur_partition("vertex") % 3  # all_to_one("vertex") routes every partial there
    new[owner].process([100])
    for driven in new:
        driven.complete()
    assert [driven.output for driven in new] == [[111] if i == owner else [] for i in range(3)]


def test_a_global_aggregation_that_already_emitted_does_not_emit_again_after_a_restore():
    TestSupport.verify_processor(accumulate_p(summing())).input([1, 2, 3]).expect_output([6])
    TestSupport.verify_processor(combine_p(summing())).input([6, 4]).expect_output([10])


# -- windows ------------------------------------------------------------------------------------
def keyed_events(draw_keys, draw_ts):
    return [(ts, (key, n)) for n, (ts, key) in enumerate(zip(draw_ts, draw_keys))]


def window_oracle(events, size, slide):
    """Counts per (window end, key) of every event, in plain Python."""
    counts = Counter()
    for ts, (key, _n) in events:
        first_end = ts - ts % slide + slide
        for end in range(first_end, first_end + size, slide):
            counts[(end, key)] += 1
    return counts


EVENTS = st.lists(st.tuples(st.integers(0, 60), st.sampled_from("abcde")), max_size=40)


@settings(max_examples=40, deadline=None)
@given(EVENTS, EVENTS, COUNTS, st.sampled_from([(4, 2), (3, 3), (6, 2)]))
def test_sliding_windows_restored_into_another_parallelism_match_the_oracle(first, second, counts, sizes):
    size, slide = sizes
    before = [(ts, (key, n)) for n, (ts, key) in enumerate(first)]
    # events after the snapshot are not late: they come after the highest watermark before it
    after = [(ts + 100, (key, n + 1000)) for n, (ts, key) in enumerate(second)]
    supplier = aggregate_to_sliding_window_p(lambda e: e[0], sliding_win_policy(size, slide), counting())
    key = lambda pair: pair[1][0]  # noqa: E731
    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for driven, share in zip(old, by_partition(before, counts[0], key)):
        driven.process(share).watermark(30)
    new = restore_all(supplier, [d.save() for d in old], counts[1])
    for driven, share in zip(new, by_partition(after, counts[1], key)):
        driven.process(share).watermark(130).complete()
    results = Counter()
    for driven in old + new:
        for entry in driven.output:
            if type(entry) is not Watermark:
                _ts, result = entry
                assert (result.end, result.key) not in results, "a window was emitted twice"
                results[(result.end, result.key)] = result.result
    assert results == window_oracle(before + after, size, slide)


@settings(max_examples=30, deadline=None)
@given(EVENTS, EVENTS, COUNTS)
def test_session_windows_restored_into_another_parallelism_match_a_one_processor_run(first, second, counts):
    before = [(ts, (key, n)) for n, (ts, key) in enumerate(first)]
    after = [(ts + 50, (key, n + 1000)) for n, (ts, key) in enumerate(second)]
    supplier = aggregate_to_session_window_p(10, lambda e: e[0], counting())
    oracle = Driven(supplier, context_of(0, 1)).process(before).watermark(20).process(after).complete()
    key = lambda pair: pair[1][0]  # noqa: E731
    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for driven, share in zip(old, by_partition(before, counts[0], key)):
        driven.process(share).watermark(20)
    new = restore_all(supplier, [d.save() for d in old], counts[1])
    for driven, share in zip(new, by_partition(after, counts[1], key)):
        driven.process(share).complete()
    emitted = [e for d in old + new for e in d.output if type(e) is not Watermark]
    assert sorted(emitted, key=repr) == sorted([e for e in oracle.output if type(e) is not Watermark], key=repr)


def test_session_windows_pass_the_harness_with_a_global_key():
    stream = [(0, "x"), (3, "y"), (30, "z"), Watermark(20), (31, "w")]
    TestSupport.verify_processor(aggregate_to_session_window_p(10, None, counting())).input(stream) \
        .output_checker(lambda exp, act: sorted(map(repr, exp)) == sorted(map(repr, act))) \
        .expect_output([(12, _window(0, 13, 2)), Watermark(20), (40, _window(30, 41, 2))])


def _window(start, end, result):
    from jet.core.window_results import WindowResult
    return WindowResult(start, end, result)


# -- stateful mapping ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(WORDS, WORDS, COUNTS)
def test_stateful_mapping_restored_into_another_parallelism_keeps_counting(before, after, counts):
    def count(state, key, item):
        state[0] += 1
        return (key, state[0])

    supplier = transform_stateful_p("map", lambda w: w, 0, lambda: [0], count)
    pairs = lambda words, base: [(base + i, w) for i, w in enumerate(words)]  # noqa: E731
    output = run_restored(supplier, pairs(before, 0), pairs(after, 1000), counts, key=lambda p: p[1])
    seen = Counter()
    expected = []
    for word in before + after:
        seen[word] += 1
        expected.append((word, seen[word]))
    assert sorted(item for _ts, item in output) == sorted(expected)


def test_global_stateful_mapping_passes_the_harness_and_routes_to_the_all_to_one_target():
    def running(state, item):
        state[0] += item
        return state[0]

    supplier = transform_stateful_p("map", None, 0, lambda: [0], running)
    TestSupport.verify_processor(supplier).input([(1, 5), (2, 6), Watermark(2), (3, 7)]) \
        .expect_output([(1, 5), (2, 11), Watermark(2), (3, 18)])
    saved = Driven(supplier, context_of(0, 1)).process([(1, 5)]).save()
    new = restore_all(supplier, [saved], 2)
    owner = murmur_partition("vertex") % 2
    assert new[owner].process([(2, 1)]).output == [(2, 6)]


# -- hash join ----------------------------------------------------------------------------------
def test_hash_join_restores_its_table_and_a_collected_again_table_replaces_it():
    items = ["a1", "b2", "c3"]
    lookup = ["a-x", "b-y", "a-z"]
    join = lambda: HashJoinP(lambda s: s[0], lambda item, match: (item, match))  # noqa: E731
    expected = [("a1", "a-x"), ("a1", "a-z"), ("b2", "b-y"), ("c3", None)]
    collector = Driven(lambda: HashJoinCollectP(lambda s: s[0]), context_of(0, 1)).process(lookup).complete()
    TestSupport.verify_processor(join).inputs([items, collector.output], priorities=[0, -1]) \
        .expect_output(expected)
    joiner = Driven(join, context_of(0, 1)).process(collector.output, ordinal=1).process(items[:1])
    restored = restore_all(join, [joiner.save()], 2)
    restored[0].process(items[1:])
    restored[1].process(collector.output, ordinal=1).process(items)  # the lookup side read again
    assert joiner.output + restored[0].output == expected
    assert restored[1].output == expected


def test_hash_join_collector_restores_its_partial_table_and_does_not_emit_twice():
    collect = lambda: HashJoinCollectP(lambda s: s[0])  # noqa: E731
    TestSupport.verify_processor(collect).input(["a-x", "b-y", "a-z"]) \
        .expect_output([{"a": ["a-x", "a-z"], "b": ["b-y"]}])
    emitted = Driven(collect, context_of(0, 1)).process(["a-x"]).complete()
    assert restore_all(collect, [emitted.save()], 1)[0].complete().output == []


# -- watermarks ---------------------------------------------------------------------------------
def test_restored_watermark_insertion_never_goes_below_what_any_processor_emitted():
    policy = EventTimePolicy(timestamp_fn=lambda e: e, allowed_lag_ms=0, frame_size_ms=10)
    supplier = insert_watermarks_p(policy, clock_ms=FakeClock())
    fast = Driven(supplier, context_of(0, 2)).process([500])
    slow = Driven(supplier, context_of(1, 2)).process([300])
    assert fast.output[-1] == Watermark(500) and slow.output[-1] == Watermark(300)
    restored = restore_all(supplier, [fast.save(), slow.save()], 1)[0]
    restored.process([100, 305]).process([420])
    watermarks = [e.timestamp for e in restored.output if type(e) is Watermark]
    assert watermarks == [420]  # nothing at or below 300 again, and on from the slower one
