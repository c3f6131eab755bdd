"""Stateful map / filter / flat-map with TTL eviction (Jet's TransformStatefulP)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jet.core.processors import transform_stateful_p
from jet.core.special_items import MAX_TIMESTAMP, Watermark
from jet.core.test_support import TestSupport
from tests.core.stream_driver import StreamDriver


def key_of(event):
    return event[0]


def running_total(state, key, event):
    state[0] += event[1]
    return key, state[0]


def new_state():
    return [0]


def on_evict(state, key, watermark):
    return "evicted", key, state[0], watermark


def running_total_oracle(pairs):
    """(ts, (key, total so far)) per event, computed directly."""
    totals, output = {}, []
    for ts, (key, value) in pairs:
        totals[key] = totals.get(key, 0) + value
        output.append((ts, (key, totals[key])))
    return output


def test_map_keeps_state_per_key_and_never_drops_without_a_ttl():
    pairs = [(10, ("a", 1)), (11, ("b", 5)), (3, ("a", 2)), (12, ("a", 4))]
    inputs = pairs[:2] + [Watermark(11)] + pairs[2:]
    expected = running_total_oracle(pairs)
    expected.insert(2, Watermark(11))
    supplier = transform_stateful_p("map", key_of, 0, new_state, running_total)
    TestSupport.verify_processor(supplier).input(inputs).expect_output(expected)
    driver = StreamDriver(supplier).feed(inputs).complete()
    assert driver.processor.late_events_dropped == 0


def test_ttl_evicts_keys_with_on_evict_output_at_the_watermark_and_drops_late_events():
    inputs = [(10, ("a", 1)), (20, ("b", 2)), (25, ("a", 3)), Watermark(30),
              (12, ("b", 9)), Watermark(36), (40, ("b", 4))]
    # TTL 10: at wm 30 keys with ts < 20 go: none ("b" is 20, "a" is 25). The late event (12 < 30)
    # is dropped. At wm 36: "b" (20 < 26) goes; "a" (25 < 26) goes too. "b" starts over at 40.
    expected = [(10, ("a", 1)), (20, ("b", 2)), (25, ("a", 4)), Watermark(30),
                (36, ("evicted", "b", 2, 36)), (36, ("evicted", "a", 4, 36)), Watermark(36),
                (40, ("b", 4)), (MAX_TIMESTAMP, ("evicted", "b", 4, MAX_TIMESTAMP))]
    supplier = transform_stateful_p("map", key_of, 10, new_state, running_total, on_evict)
    TestSupport.verify_processor(supplier).input(inputs).expect_output(expected)
    driver = StreamDriver(supplier).feed(inputs)
    assert driver.processor.late_events_dropped == 1


def test_eviction_stops_at_the_first_live_key_in_access_order():
    # "a" is touched last by an old event: the LRU order is b, a; b is alive at wm 40, so the
    # scan stops before the expired "a" (Jet's approximation with out-of-order events).
    inputs = [(5, ("a", 1)), (35, ("b", 1)), (6, ("a", 1)), Watermark(40)]
    supplier = transform_stateful_p("map", key_of, 10, new_state, running_total, on_evict)
    driver = StreamDriver(supplier).feed(inputs)
    assert driver.take()[-1] == Watermark(40)
    assert set(driver.processor.states) == {"a", "b"}
    driver.watermark(50)
    assert driver.take() == [(50, ("evicted", "b", 1, 50)), (50, ("evicted", "a", 2, 50)), Watermark(50)]


def test_filter_and_flat_map():
    pairs = [(1, ("a", 1)), (2, ("a", 1)), (3, ("b", 7)), (4, ("a", 5))]

    def first_per_key(state, key, event):
        seen = state[0]
        state[0] = 1
        return not seen

    TestSupport.verify_processor(transform_stateful_p("filter", key_of, 0, new_state, first_per_key)) \
        .input(pairs).expect_output([pairs[0], pairs[2]])

    def repeat_total(state, key, event):
        state[0] += 1
        return [key] * state[0]

    TestSupport.verify_processor(transform_stateful_p("flat_map", key_of, 0, new_state, repeat_total)) \
        .input(pairs).expect_output([(1, "a"), (2, "a"), (2, "a"), (3, "b"), (4, "a"), (4, "a"), (4, "a")])


def test_global_state_is_shared_by_all_items():
    def count(state, event):
        state[0] += 1
        return state[0]

    pairs = [(1, "x"), (2, "y"), (3, "z")]
    TestSupport.verify_processor(transform_stateful_p("map", None, 0, new_state, count)) \
        .input(pairs).expect_output([(1, 1), (2, 2), (3, 3)])


def test_map_output_none_emits_nothing_and_complete_evicts_everything():
    def every_second(state, key, event):
        state[0] += 1
        return None if state[0] % 2 else state[0]

    pairs = [(1, ("a", 0)), (2, ("a", 0)), (3, ("a", 0)), (4, ("b", 0))]
    TestSupport.verify_processor(transform_stateful_p("map", key_of, 0, new_state, every_second, on_evict)) \
        .input(pairs).expect_output([(2, 2), (MAX_TIMESTAMP, ("evicted", "a", 3, MAX_TIMESTAMP)),
                                     (MAX_TIMESTAMP, ("evicted", "b", 1, MAX_TIMESTAMP))])


@pytest.mark.parametrize("args, error, message", [
    (("reduce", key_of, 0, new_state, running_total), ValueError, "kind must be one of"),
    (("map", key_of, "10s", new_state, running_total), TypeError, "ttl_ms must be an int"),
    (("map", key_of, 0, None, running_total), TypeError, "create_fn must be callable"),
    (("map", "key", 0, new_state, running_total), TypeError, "key_fn must be callable or None"),
])
def test_bad_arguments_are_refused(args, error, message):
    with pytest.raises(error, match=message):
        transform_stateful_p(*args)


def _outputs(kind, total):
    """What the test function returns for ``kind`` with the running ``total``: None, falsy
    values, empty and non-empty tuples, lists and generators all come up."""
    if kind == "map":
        return None if total % 3 == 0 else total
    if kind == "filter":
        return total % 2  # an int, not a bool
    shape = total % 4
    outs = [total] * (total % 3)
    return (tuple(outs), outs, (out for out in outs), ())[shape]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.integers(0, 30), st.sampled_from("abc"), st.integers(1, 4)),
                          st.integers(0, 30)), max_size=40),
       st.sampled_from(["map", "filter", "flat_map"]), st.booleans(), st.sampled_from([0, 1000]))
def test_every_kind_over_chunks_matches_plain_python(entries, kind, keyed, ttl):
    """Chunks of out-of-order events between watermarks (an int entry), keyed or global, with a
    TTL (late events dropped) or without, against the same function applied one event at a time."""
    def fn(state, *key_and_event):
        state[0] += key_and_event[-1][1]
        return _outputs(kind, state[0])

    inputs = [Watermark(e) if isinstance(e, int) else (e[0], (e[1], e[2])) for e in entries]
    totals, expected, watermark, late = {}, [], None, 0
    for entry in inputs:
        if type(entry) is Watermark:
            watermark = entry.timestamp
            expected.append(entry)
            continue
        ts, event = entry
        if ttl and watermark is not None and ts < watermark:
            late += 1
            continue
        key = event[0] if keyed else None
        totals[key] = totals.get(key, 0) + event[1]
        result = _outputs(kind, totals[key])
        if kind == "map":
            expected += [] if result is None else [(ts, result)]
        elif kind == "filter":
            expected += [entry] if result else []
        else:
            expected += [(ts, out) for out in result]
    driver = StreamDriver(transform_stateful_p(kind, key_of if keyed else None, ttl, new_state, fn))
    assert driver.feed(inputs).complete().take() == expected
    assert driver.processor.late_events_dropped == late


def test_a_map_on_evict_result_that_is_falsy_but_not_none_is_emitted():
    # only None means "nothing" (as Jet's null); a count of 0 or an empty string is a result
    def evicted_total(state, key, watermark):
        return 0 if key == "a" else None

    inputs = [(1, ("a", 3)), (2, ("b", 4)), Watermark(20)]
    supplier = transform_stateful_p("map", key_of, 5, new_state, running_total, evicted_total)
    driver = StreamDriver(supplier).feed(inputs)
    assert driver.take() == [(1, ("a", 3)), (2, ("b", 4)), (20, 0), Watermark(20)]
