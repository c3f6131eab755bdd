"""Windowed co-grouping, window joins and the interval join, run to the end on one member and
on several in this process, against plain-Python oracles over the same partly out-of-order
events (finite streams: when every source completes, the windows flush)."""

from operator import itemgetter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jet import AggregateOperations as A, Pipeline, Sinks, WindowDefinition

from tests.pipeline.co_group_oracles import (ALLOWED_LAG_MS, co_counts, interval_join, out_of_order_events,
                                             window_join)
from tests.pipeline.stream_support import finite_stream
from tests.pipeline.support import run_pipeline

ts_of, key_of, value_of = itemgetter(0), itemgetter(1), itemgetter(2)
WINDOWS = {
    "tumbling": (WindowDefinition.tumbling(250), ("sliding", 250, 250)),
    "sliding": (WindowDefinition.sliding(300, 100), ("sliding", 300, 100)),
    "session": (WindowDefinition.session(40), ("session", 40)),
}


def _streams(p, *inputs):
    return [p.read_from(finite_stream(events, f"in{i}")).with_timestamps(ts_of, ALLOWED_LAG_MS)
            for i, events in enumerate(inputs)]


def _inputs(count, n=150, seed=5):
    return [out_of_order_events(n, seed + i, f"v{i}-") for i in range(count)]


@pytest.mark.parametrize("members", [1, 2, 3])
@pytest.mark.parametrize("window", sorted(WINDOWS))
def test_keyed_aggregate2_and_aggregate3_count_each_input(members, window):
    definition, shape = WINDOWS[window]
    inputs = _inputs(3)
    p = Pipeline.create()
    s0, s1, s2 = _streams(p, *inputs)
    s0.grouping_key(key_of).window(definition).aggregate2(A.counting(), s1.grouping_key(key_of), A.counting()) \
        .write_to(Sinks.list("two"))
    s0.grouping_key(key_of).window(definition) \
        .aggregate3(s1.grouping_key(key_of), s2.grouping_key(key_of),
                    A.aggregate_operation3(A.counting(), A.counting(), A.counting())) \
        .write_to(Sinks.list("three"))
    results = run_pipeline(p, members)
    assert sorted(results["two"]) == co_counts(inputs[:2], shape)
    assert sorted(results["three"]) == co_counts(inputs, shape)


@pytest.mark.parametrize("members", [1, 2])
def test_unkeyed_windows_a_builder_of_four_inputs_and_a_one_stage_plan(members):
    inputs = _inputs(4, n=80, seed=9)
    p = Pipeline.create()
    streams = _streams(p, *inputs)
    tumbling = WindowDefinition.tumbling(250)
    streams[0].window(WindowDefinition.sliding(300, 100)).aggregate2(streams[1], A.aggregate_operation2(
        A.counting(), A.counting())).write_to(Sinks.list("unkeyed"))
    builder = streams[0].grouping_key(key_of).window(tumbling).aggregate_builder(A.counting())
    tags = [builder.add(stream.grouping_key(key_of), A.counting()) for stream in streams[1:]]
    assert tags == [1, 2, 3]
    builder.build().write_to(Sinks.list("four"))
    # a rebalanced input makes the plan one stage
    streams[0].rebalance().grouping_key(key_of).window(tumbling) \
        .aggregate2(A.to_list(), streams[1].grouping_key(key_of), A.counting()) \
        .map(lambda r: r._replace(result=(len(r.result[0]), r.result[1]))).write_to(Sinks.list("one-stage"))
    results = run_pipeline(p, members)
    assert sorted(results["unkeyed"]) == co_counts(inputs[:2], ("sliding", 300, 100), keyed=False)
    assert sorted(results["four"]) == co_counts(inputs, ("sliding", 250, 250))
    assert sorted(results["one-stage"]) == co_counts(inputs[:2], ("sliding", 250, 250))


def test_two_stage_and_one_stage_plans():
    p = Pipeline.create()
    s0, s1 = _streams(p, [], [])
    s0.grouping_key(key_of).window(WindowDefinition.sliding(300, 100)) \
        .aggregate2(A.counting(), s1.grouping_key(key_of), A.counting()).write_to(Sinks.list("a"))
    s0.grouping_key(key_of).window(WindowDefinition.session(40)) \
        .aggregate2(A.counting(), s1.grouping_key(key_of), A.counting()).write_to(Sinks.list("b"))
    dag = str(p.to_dag())
    assert "'sliding-window-co-group2-prepare', 'sliding-window-co-group2'" in dag
    assert "'session-window-co-group2'" in dag and "session-window-co-group2-prepare" not in dag


@pytest.mark.parametrize("members", [1, 2, 3])
@pytest.mark.parametrize("window", sorted(WINDOWS))
def test_window_joins_inner_and_left(members, window):
    definition, shape = WINDOWS[window]
    left, right = _inputs(2, n=120, seed=21)
    p = Pipeline.create()
    s0, s1 = _streams(p, left, right)
    pair = lambda a, b: (value_of(a), None if b is None else value_of(b))  # noqa: E731
    s0.grouping_key(key_of).window(definition).join(s1.grouping_key(key_of), pair).write_to(Sinks.list("inner"))
    s0.grouping_key(key_of).window(definition).join(s1.grouping_key(key_of), pair, how="left") \
        .write_to(Sinks.list("left"))
    results = run_pipeline(p, members)
    assert sorted(results["inner"], key=repr) == window_join(left, right, shape)
    assert sorted(results["left"], key=repr) == window_join(left, right, shape, how="left")


@pytest.mark.parametrize("members", [1, 2, 3])
@pytest.mark.parametrize("lower, upper, broadcast", [(0, 0, None), (20, 50, None), (100, 10, None),
                                                     (20, 50, "left"), (100, 10, "right")])
def test_interval_join(members, lower, upper, broadcast):
    left, right = _inputs(2, n=200, seed=33)
    p = Pipeline.create()
    s0, s1 = _streams(p, left, right)
    s0.grouping_key(key_of).interval_join(s1.grouping_key(key_of), lower, upper,
                                          lambda a, b: (value_of(a), value_of(b)), broadcast=broadcast) \
        .write_to(Sinks.list("joined"))
    results = run_pipeline(p, members)
    assert sorted(results["joined"]) == sorted(v for _, v in interval_join(left, right, lower, upper))


event_lists = st.lists(st.tuples(st.integers(0, 600), st.sampled_from("abc")), max_size=40)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(left=event_lists, right=event_lists, window=st.sampled_from(sorted(WINDOWS)), members=st.sampled_from([1, 2]),
       bounds=st.tuples(st.integers(0, 60), st.integers(0, 60)))
def test_two_stage_equals_one_stage_equals_the_oracle(left, right, window, members, bounds):
    definition, shape = WINDOWS[window]
    # sorted, so that no event is late whatever the lag; values tell the events apart
    left = [(ts, key, f"l{i}") for i, (ts, key) in enumerate(sorted(left))]
    right = [(ts, key, f"r{i}") for i, (ts, key) in enumerate(sorted(right))]
    p = Pipeline.create()
    s0, s1 = _streams(p, left, right)
    s0.grouping_key(key_of).window(definition).aggregate2(A.counting(), s1.grouping_key(key_of), A.counting()) \
        .write_to(Sinks.list("two-stage"))
    s0.rebalance().grouping_key(key_of).window(definition) \
        .aggregate2(A.counting(), s1.grouping_key(key_of), A.counting()).write_to(Sinks.list("one-stage"))
    s0.grouping_key(key_of).window(definition).join(s1.grouping_key(key_of), lambda a, b: (a[2], b[2])) \
        .write_to(Sinks.list("join"))
    s0.grouping_key(key_of).interval_join(s1.grouping_key(key_of), *bounds, lambda a, b: (a[2], b[2])) \
        .write_to(Sinks.list("interval"))
    results = run_pipeline(p, members)
    expected = co_counts([left, right], shape)
    assert sorted(results["two-stage"]) == expected
    assert sorted(results["one-stage"]) == expected
    assert sorted(results["join"], key=repr) == window_join(left, right, shape)
    assert sorted(results["interval"]) == sorted(v for _, v in interval_join(left, right, *bounds))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("members", [2, 3])
def test_co_grouping_and_joins_on_a_local_cluster(members):
    import jet
    left, right, third = _inputs(3, n=150, seed=41)
    definition, shape = WINDOWS["sliding"]
    p = Pipeline.create()
    s0, s1, s2 = _streams(p, left, right, third)
    s0.grouping_key(key_of).window(definition).aggregate3(
        A.counting(), s1.grouping_key(key_of), A.counting(), s2.grouping_key(key_of), A.counting()) \
        .write_to(Sinks.list("three"))
    s0.grouping_key(key_of).window(WINDOWS["session"][0]).join(
        s1.grouping_key(key_of), lambda a, b: (a[2], b and b[2]), how="left").write_to(Sinks.list("join"))
    s0.grouping_key(key_of).interval_join(s1.grouping_key(key_of), 20, 40, lambda a, b: (a[2], b[2])) \
        .write_to(Sinks.list("interval"))
    s0.grouping_key(key_of).interval_join(s1.grouping_key(key_of), 20, 40, lambda a, b: (a[2], b[2]),
                                          broadcast="right").write_to(Sinks.list("broadcast"))
    with jet.local_cluster(members=members) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        assert sorted(job.result("three")) == co_counts([left, right, third], shape)
        assert sorted(job.result("join"), key=repr) == window_join(left, right, WINDOWS["session"][1], how="left")
        assert sorted(job.result("interval")) == sorted(v for _, v in interval_join(left, right, 20, 40))
        assert sorted(job.result("broadcast")) == sorted(v for _, v in interval_join(left, right, 20, 40))


@pytest.mark.timeout(300)
def test_late_items_are_left_out_and_counted_on_a_local_cluster():
    """The left stream's last chunk comes 0.3 s after its first, behind the watermark that chunk
    made; by then the right stream has ended (its watermark no longer holds the others back)."""
    import jet
    on_time = [(1000 + 40 * i, "ab"[i % 2], f"l{i}") for i in range(50)]
    late = [(10, "a", "late1"), (20, "b", "late2"), (1500, "a", "late3")]
    right = [(60 * i, "ab"[i % 2], f"r{i}") for i in range(50)]
    p = Pipeline.create()
    left_stream = p.read_from(finite_stream(on_time + late, "left", local_parallelism=1, all_on_first=True,
                                            chunk_size=50, pause_s=0.3)).with_timestamps(ts_of, ALLOWED_LAG_MS)
    right_stream = p.read_from(finite_stream(right, "right", local_parallelism=1, all_on_first=True,
                                             chunk_size=50)).with_timestamps(ts_of, ALLOWED_LAG_MS)
    tumbling = WindowDefinition.tumbling(1000)
    left_stream.grouping_key(key_of).window(tumbling) \
        .aggregate2(A.counting(), right_stream.grouping_key(key_of), A.counting()).write_to(Sinks.list("counts"))
    left_stream.grouping_key(key_of).window(tumbling).join(
        right_stream.grouping_key(key_of), lambda a, b: (a[2], b[2])).write_to(Sinks.list("join"))
    left_stream.grouping_key(key_of).interval_join(right_stream.grouping_key(key_of), 100, 100,
                                                   lambda a, b: (a[2], b[2])).write_to(Sinks.list("interval"))
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        metrics = job.metrics()
        assert sorted(job.result("counts")) == co_counts([on_time, right], ("sliding", 1000, 1000))
        assert sorted(job.result("join"), key=repr) == window_join(on_time, right, ("sliding", 1000, 1000))
        assert sorted(job.result("interval")) == sorted(v for _, v in interval_join(on_time, right, 100, 100))
    for vertex in ("sliding-window-co-group2-prepare", "window-join", "interval-join"):
        assert metrics[vertex]["lateEventsDropped"] == len(late), (vertex, metrics[vertex])
