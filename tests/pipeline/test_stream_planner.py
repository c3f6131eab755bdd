"""How streams are planned: vertices, edges, routing, parallelism and the watermark frame.

The stream processors are replaced by recorders here, so these tests see exactly what the
planner asked for; running the plans is ``test_stream_execution.py``'s part.
"""

import sys
import types
from operator import attrgetter

import pytest
from jet import AggregateOperation, Pipeline, Sinks, Sources, WindowDefinition
from jet import AggregateOperations as A
from jet.core.partitioner import HASH_PARTITIONER
from jet.pipeline.errors import PipelineDefinitionError
from jet.pipeline.join_processors import TimestampedHashJoinP
from jet.pipeline.source_sink import StreamSource

_FACTORIES = ("insert_watermarks_p", "accumulate_by_frame_p", "combine_to_sliding_window_p",
              "aggregate_to_sliding_window_p", "aggregate_to_session_window_p", "transform_stateful_p")


@pytest.fixture
def calls(monkeypatch):
    """Every stream factory the planner calls, by name, with its arguments."""
    import jet.core.processors as processors
    # imported now, with the real policies: modules a test imports lazily under the fake ones below
    # would keep the fakes for every later test
    import jet.core.processors.co_group  # noqa: F401
    import jet.pipeline.co_group_planner  # noqa: F401
    recorded = {}

    def recorder(name):
        def factory(*args):
            recorded.setdefault(name, []).append(args)
            return lambda: None
        return factory

    for name in _FACTORIES:
        monkeypatch.setattr(processors, name, recorder(name), raising=False)
    policies = types.ModuleType("jet.core.sliding_window_policy")
    policies.sliding_win_policy = lambda size, slide: ("sliding", size, slide)
    policies.tumbling_win_policy = lambda size: ("tumbling", size)
    monkeypatch.setitem(sys.modules, "jet.core.sliding_window_policy", policies)
    return recorded


def _stream(name="events", lp=2, **fields):
    return StreamSource(name, lambda: None, local_parallelism=lp, **fields)


def _edges(dag):
    return {(e.source_name, e.dest_name): e for e in dag.edges}


def _lps(dag):
    return {v.name: v.local_parallelism for v in dag.vertices}


def _keyed_counts(definition, key_fn=lambda e: e["k"]):
    p = Pipeline.create()
    (p.read_from(_stream()).with_timestamps(lambda e: e["t"], 10).grouping_key(key_fn)
     .window(definition).aggregate(A.counting()).write_to(Sinks.list()))
    return p


def test_a_source_without_a_policy_supplier_gets_an_add_timestamps_vertex(calls):
    p = Pipeline.create()
    p.read_from(_stream(partition_idle_timeout_ms=777)).with_timestamps(abs, 10).map(str).write_to(Sinks.list())
    dag = p.to_dag(4)
    assert _lps(dag)["events-add-timestamps"] == 2
    edge = _edges(dag)[("events", "events-add-timestamps")]
    assert edge.routing_policy.name == "ISOLATED" and not edge.is_distributed()
    ((policy,),) = calls["insert_watermarks_p"]
    assert (policy.timestamp_fn, policy.allowed_lag_ms, policy.idle_timeout_ms) == (abs, 10, 777)
    assert (policy.frame_size_ms, policy.frame_offset_ms) == (1000, 0)
    assert ("events-add-timestamps", "map") in _edges(dag)


def test_a_source_with_a_policy_supplier_gets_the_throttled_policy(calls):
    given = []

    def policy_supplier(policy):
        given.append(policy)
        return lambda: None

    p = Pipeline.create()
    stream = p.read_from(_stream(policy_supplier=policy_supplier, native_timestamps=True))
    stream.with_native_timestamps(5).window(WindowDefinition.tumbling(40)).aggregate(A.counting()) \
        .write_to(Sinks.list())
    dag = p.to_dag(2)
    assert "events-add-timestamps" not in _lps(dag) and "insert_watermarks_p" not in calls
    (policy,) = given
    assert (policy.timestamp_fn, policy.allowed_lag_ms, policy.frame_size_ms) == (None, 5, 40)


def test_a_source_without_timestamps_gets_no_policy_and_no_watermark_vertex(calls):
    given = []
    p = Pipeline.create()
    p.read_from(_stream(policy_supplier=lambda pol: given.append(pol) or (lambda: None))) \
        .without_timestamps().map(str).write_to(Sinks.list())
    p.read_from(_stream("plain")).without_timestamps().write_to(Sinks.logger())
    dag = p.to_dag(2)
    assert given == [None]
    assert set(_lps(dag)) == {"events", "map", "list(default)", "plain", "logger"}


@pytest.mark.parametrize("stages, frame_ms", [
    ([], 1000),
    ([WindowDefinition.sliding(30, 10)], 10),
    ([WindowDefinition.tumbling(1500)], 500),
    ([WindowDefinition.tumbling(60_000)], 1000),
    ([WindowDefinition.session(10_000)], 100),
    ([WindowDefinition.session(50)], 1),
    ([("ttl", 2000)], 200),
    ([("ttl", 5)], 1),
    ([WindowDefinition.tumbling(300), WindowDefinition.session(4000), ("ttl", 4500)], 10),
])
def test_the_watermark_frame_is_the_gcd_of_the_preferred_strides(calls, stages, frame_ms):
    p = Pipeline.create()
    stream = p.read_from(_stream()).with_timestamps(abs, 0)
    bare = p.read_from(_stream("bare")).without_timestamps().add_timestamps(abs, 3)
    bare.write_to(Sinks.logger())
    stream.map_stateful(dict, max).write_to(Sinks.noop())  # global: no TTL, no stride
    for stage in stages:
        if isinstance(stage, tuple):
            stream.grouping_key(abs).map_stateful(stage[1], dict, max).write_to(Sinks.noop())
        else:
            stream.grouping_key(abs).window(stage).aggregate(A.counting()).write_to(Sinks.noop())
    p.to_dag(2)
    assert [args[0].frame_size_ms for args in calls["insert_watermarks_p"]] == [frame_ms, frame_ms]


def test_a_keyed_tumbling_window_is_two_stages_partitioned_by_key(calls):
    dag = _keyed_counts(WindowDefinition.tumbling(100)).to_dag(3)
    edges = _edges(dag)
    into_prepare = edges[("events-add-timestamps", "sliding-window-prepare")]
    assert into_prepare.routing_policy.name == "PARTITIONED" and not into_prepare.is_distributed()
    assert into_prepare.partitioner is HASH_PARTITIONER
    assert into_prepare.key_fn((17, {"k": "a", "t": 17})) == "a"
    into_combine = edges[("sliding-window-prepare", "sliding-window")]
    assert into_combine.routing_policy.name == "PARTITIONED" and into_combine.is_distributed()
    assert into_combine.key_fn(("a", 100, 3)) == "a"
    assert _lps(dag)["sliding-window-prepare"] == _lps(dag)["sliding-window"] == -1
    ((key_fn, policy, operation),) = calls["accumulate_by_frame_p"]
    assert policy == ("tumbling", 100) and key_fn({"k": "b"}) == "b"
    ((policy, operation2, keyed),) = calls["combine_to_sliding_window_p"]
    assert (policy, operation2, keyed) == (("tumbling", 100), operation, True)


def test_a_non_keyed_sliding_window_ends_in_one_processor_of_the_cluster(calls):
    p = Pipeline.create()
    (p.read_from(_stream()).with_timestamps(abs, 0).window(WindowDefinition.sliding(100, 25))
     .aggregate(A.summing()).write_to(Sinks.list()))
    dag = p.to_dag(3)
    edges = _edges(dag)
    assert edges[("events-add-timestamps", "sliding-window-prepare")].routing_policy.name == "ISOLATED"
    into_combine = edges[("sliding-window-prepare", "sliding-window")]
    assert into_combine.is_distributed() and into_combine.all_to_one_key == "sliding-window"
    assert _lps(dag)["sliding-window"] == 1
    ((key_fn, policy, _),) = calls["accumulate_by_frame_p"]
    assert key_fn is None and policy == ("sliding", 100, 25)
    assert calls["combine_to_sliding_window_p"][0][2] is False


@pytest.mark.parametrize("variant", ["early results", "rebalance", "no combine", "to_list", "all_of to_lists"])
def test_early_results_a_rebalance_no_combine_or_no_reduction_make_a_window_one_stage(calls, variant):
    definition = WindowDefinition.tumbling(100)
    operation = A.counting()
    if variant == "early results":
        definition.set_early_results_period(20)
    if variant == "no combine":
        operation = AggregateOperation(list, lambda acc, x: acc + [x])
    if variant == "to_list":  # a first stage would send every item anyway
        operation = A.to_list()
    if variant == "all_of to_lists":
        operation = A.all_of(A.to_list(), A.to_list())
    p = Pipeline.create()
    stream = p.read_from(_stream()).with_timestamps(abs, 0)
    if variant == "rebalance":
        stream = stream.rebalance()
    stream.grouping_key(str).window(definition).aggregate(operation).write_to(Sinks.list())
    dag = p.to_dag(2)
    assert "sliding-window-prepare" not in _lps(dag) and "accumulate_by_frame_p" not in calls
    edge = _edges(dag)[("events-add-timestamps", "sliding-window")]
    assert edge.routing_policy.name == "PARTITIONED" and edge.is_distributed()
    assert edge.key_fn((5, 42)) == "42"
    ((key_fn, policy, op, early_ms),) = calls["aggregate_to_sliding_window_p"]
    assert (key_fn, policy, op) == (str, ("tumbling", 100), operation)
    assert early_ms == (20 if variant == "early results" else 0)


def test_session_windows_are_one_stage_keyed_or_in_one_processor(calls):
    p = Pipeline.create()
    stream = p.read_from(_stream()).with_timestamps(abs, 0)
    stream.grouping_key(str).window(WindowDefinition.session(500).set_early_results_period(7)) \
        .aggregate(A.counting()).write_to(Sinks.list("keyed"))
    stream.window(WindowDefinition.session(300)).aggregate(A.counting()).write_to(Sinks.list("all"))
    dag = p.to_dag(2)
    edges, lps = _edges(dag), _lps(dag)
    keyed = edges[("events-add-timestamps", "session-window")]
    assert keyed.is_distributed() and keyed.key_fn((1, 9)) == "9" and lps["session-window"] == -1
    single = edges[("events-add-timestamps", "session-window-2")]
    assert single.is_distributed() and single.all_to_one_key == "session-window-2"
    assert lps["session-window-2"] == 1
    assert calls["aggregate_to_session_window_p"][0][:2] == (500, str)
    assert calls["aggregate_to_session_window_p"][0][3] == 7
    assert calls["aggregate_to_session_window_p"][1][:2] == (300, None)


def test_stateful_mapping_partitions_by_key_and_global_state_is_one_processor(calls):
    p = Pipeline.create()
    stream = p.read_from(_stream()).with_timestamps(abs, 0)

    def keep(state, item):
        return item > 0

    stream.grouping_key(str).filter_stateful(500, dict, keep).write_to(Sinks.list("keyed"))
    stream.map_stateful(dict, max).write_to(Sinks.list("global"))
    dag = p.to_dag(2)
    edges, lps = _edges(dag), _lps(dag)
    keyed = edges[("events-add-timestamps", "filter-stateful-keyed")]
    assert keyed.is_distributed() and keyed.key_fn((3, 4)) == "4" and lps["filter-stateful-keyed"] == -1
    single = edges[("events-add-timestamps", "map-stateful-global")]
    assert single.is_distributed() and single.all_to_one_key == "map-stateful-global"
    assert lps["map-stateful-global"] == 1
    (kind, key_fn, ttl, create, fn, evict), (kind2, key_fn2, ttl2, _, fn2, _) = calls["transform_stateful_p"]
    assert (kind, key_fn, ttl, create, evict) == ("filter", str, 500, dict, None)
    assert fn({}, "key", 5) is True and fn({}, "key", -5) is False  # Jet's (state, item) for keyed filter
    assert (kind2, key_fn2, ttl2, fn2) == ("map", None, 0, max)


def test_a_sink_after_stateless_stages_gets_bare_items_without_another_vertex(calls):
    p = Pipeline.create()
    p.read_from(_stream()).with_timestamps(abs, 0).map(str).filter(bool).write_to(Sinks.list())
    dag = p.to_dag(2)
    assert set(_lps(dag)) == {"events", "events-add-timestamps", "fused(map, filter)", "list(default)"}
    chain = dag.get_vertex("fused(map, filter)").processor_supplier()
    assert chain._chunk_fn([(1, 5), (2, 0), (3, -7)]) == ["5", "0", "-7"]


def test_a_sink_after_a_window_or_a_fork_gets_an_unwrap_vertex(calls):
    p = Pipeline.create()
    mapped = p.read_from(_stream()).with_timestamps(abs, 0).map(abs)
    mapped.write_to(Sinks.list("a"))
    mapped.write_to(Sinks.list("b"))
    mapped.window(WindowDefinition.tumbling(10)).aggregate(A.counting()).write_to(Sinks.list("c"))
    dag = p.to_dag(2)
    edges = _edges(dag)
    assert {(s, d) for s, d in edges if d.startswith("list")} == {
        ("map-unwrap", "list(a)"), ("map-unwrap", "list(b)"), ("sliding-window-unwrap", "list(c)")}
    assert edges[("map", "map-unwrap")].routing_policy.name == "ISOLATED"
    assert ("map", "sliding-window-prepare") in edges
    unwrap = dag.get_vertex("sliding-window-unwrap").processor_supplier()
    assert unwrap._chunk_fn([(9, "x"), (19, "y")]) == ["x", "y"]


def test_a_stateful_stage_on_a_stream_without_timestamps_gets_pairs(calls):
    p = Pipeline.create()
    bare = p.read_from(_stream()).without_timestamps()
    bare.map(abs).map_stateful(dict, max).map(str).write_to(Sinks.list())
    dag = p.to_dag(2)
    wrapping = dag.get_vertex("map").processor_supplier()
    assert wrapping._chunk_fn([-1, 2]) == [(-(1 << 63), 1), (-(1 << 63), 2)]
    unwrapping = dag.get_vertex("map-2").processor_supplier()
    assert unwrapping._chunk_fn([(-(1 << 63), 1)]) == ["1"]


def test_a_stream_hash_join_keeps_the_timestamps_and_reads_the_batch_side_first(calls):
    p = Pipeline.create()
    lookup = p.read_from(Sources.items([("a", 1)])).set_name("lookup")
    p.read_from(_stream()).with_timestamps(abs, 0).hash_join(lookup, str, attrgetter("real"), max) \
        .write_to(Sinks.list())
    dag = p.to_dag(2)
    assert isinstance(dag.get_vertex("hash-join-joiner").processor_supplier(), TimestampedHashJoinP)
    assert _edges(dag)[("hash-join-collector", "hash-join-joiner")].get_priority() == -1
    assert ("hash-join-joiner", "hash-join-joiner-unwrap") in _edges(dag)


def test_merged_streams_meet_in_one_pass_through_vertex(calls):
    p = Pipeline.create()
    first = p.read_from(_stream("first")).with_timestamps(abs, 0)
    second = p.read_from(_stream("second")).with_timestamps(abs, 0)
    first.merge(second).window(WindowDefinition.tumbling(10)).aggregate(A.counting()).write_to(Sinks.list())
    edges = _edges(p.to_dag(2))
    assert ("first-add-timestamps", "merge") in edges and ("second-add-timestamps", "merge") in edges
    assert ("merge", "sliding-window-prepare") in edges


@pytest.mark.parametrize("broadcast", [None, "left", "right"])
def test_an_interval_join_partitions_both_sides_across_members_or_broadcasts_one(broadcast):
    p = Pipeline.create()
    small = p.read_from(_stream("small")).with_timestamps(abs, 0)
    large = p.read_from(_stream("large")).with_timestamps(abs, 0)
    small.grouping_key(str).interval_join(large.grouping_key(str), 0, 10, max, broadcast=broadcast) \
        .write_to(Sinks.list())
    edges = _edges(p.to_dag(2))
    for source, ordinal in (("small-add-timestamps", 0), ("large-add-timestamps", 1)):
        edge = edges[(source, "interval-join")]
        if broadcast is None:
            assert edge.routing_policy.name == "PARTITIONED" and edge.is_distributed(), source
        elif ordinal == ("left", "right").index(broadcast):
            assert edge.routing_policy.name == "BROADCAST" and edge.is_distributed(), source
        else:  # stays on the member that produced it
            assert edge.routing_policy.name == "PARTITIONED" and not edge.is_distributed(), source


def test_an_interval_join_refuses_a_broadcast_side_it_does_not_know():
    p = Pipeline.create()
    stream = p.read_from(_stream()).with_timestamps(abs, 0)
    with pytest.raises(PipelineDefinitionError, match=r"interval_join broadcast must be 'left', 'right' or None,"
                                                      r" got 'both'"):
        stream.grouping_key(str).interval_join(stream.grouping_key(str), 0, 10, max, broadcast="both")


def test_a_first_stage_stays_when_one_part_reduces():
    assert A.all_of(A.to_list(), A.counting()).keeps_every_item is False
    assert A.to_list().keeps_every_item and not A.to_set().keeps_every_item


def test_a_window_join_is_one_stage_partitioned_across_members():
    p = Pipeline.create()
    left = p.read_from(_stream("left")).with_timestamps(abs, 0)
    right = p.read_from(_stream("right")).with_timestamps(abs, 0)
    left.grouping_key(str).window(WindowDefinition.tumbling(100)).join(right.grouping_key(str), max) \
        .write_to(Sinks.list())
    edges = _edges(p.to_dag(2))
    assert not any(dest.endswith("-prepare") for _, dest in edges)
    for source in ("left-add-timestamps", "right-add-timestamps"):
        edge = edges[(source, "window-join")]
        assert edge.routing_policy.name == "PARTITIONED" and edge.is_distributed(), source
