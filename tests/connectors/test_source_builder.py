"""SourceBuilder: batch, stream and timestamped stream sources from a few functions."""

from __future__ import annotations

import pytest
from jet import SourceBuilder
from jet.connectors.source_builder import ConvenientSourceP, TimestampedSourceBuffer
from jet.core import DAG, Edge
from jet.core.processors import list_sink_p
from jet.core.test_support import TestSupport
from jet.execution import execute
from jet.pipeline.source_sink import Source, StreamSource

from tests.cluster.inprocess import InProcessCluster


class Countdown:
    """A source's state: hands out range(total), or its processor's share of it, ``per_fill`` at a time."""

    def __init__(self, context, total: int, per_fill: int = 7, split: bool = True) -> None:
        step = context.total_parallelism if split else 1
        self.pending = list(range(context.global_index if split else 0, total, step))
        self.per_fill = per_fill
        self.destroyed = False


def fill(state: Countdown, buffer) -> None:
    taken, state.pending = state.pending[:state.per_fill], state.pending[state.per_fill:]
    for item in taken:
        buffer.add(item)
    if not state.pending:
        buffer.close()


def fill_timestamped(state: Countdown, buffer) -> None:
    taken, state.pending = state.pending[:state.per_fill], state.pending[state.per_fill:]
    for item in taken:
        buffer.add(f"event {item}", 1000 + item)
    if not state.pending:
        buffer.close()


def run(source, parallelism_members: int = 1) -> list:
    received: list = []

    def make_dag() -> DAG:
        dag = DAG()
        vertex = dag.new_vertex(source.name, source.supplier, source.local_parallelism)
        sink = dag.new_vertex("sink", list_sink_p(received), 1)
        dag.edge(Edge.between(vertex, sink))
        return dag

    if parallelism_members == 1:
        execute(make_dag(), timeout=30)
    else:
        cluster = InProcessCluster(parallelism_members)
        try:
            cluster.run(make_dag, timeout=30)
        finally:
            cluster.close()
    return received


@pytest.mark.parametrize("kind", ["batch", "stream"])
def test_a_built_source_emits_what_fill_buffer_fn_adds_and_completes_when_the_buffer_closes(kind):
    source = (getattr(SourceBuilder, kind)("countdown", lambda ctx: Countdown(ctx, 100))
              .fill_buffer_fn(fill).build())
    assert type(source) is (Source if kind == "batch" else StreamSource)
    assert sorted(run(source)) == list(range(100))


@pytest.mark.parametrize("members", [1, 3])
def test_without_distributed_one_processor_in_the_cluster_runs_the_source(members):
    created = []

    def create(ctx):
        created.append(ctx.global_index)
        return Countdown(ctx, 50, split=False)

    source = SourceBuilder.stream("once", create).fill_buffer_fn(fill).build()
    assert sorted(run(source, members)) == list(range(50))
    assert created == [0]


@pytest.mark.parametrize("members", [1, 2])
def test_a_distributed_source_runs_its_functions_on_every_processor_of_every_member(members):
    created = []

    def create(ctx):
        created.append(ctx.global_index)
        return Countdown(ctx, 300)

    source = SourceBuilder.batch("split", create).fill_buffer_fn(fill).distributed(3).build()
    assert source.local_parallelism == 3
    assert sorted(run(source, members)) == list(range(300))
    assert sorted(created) == list(range(3 * members))


def test_destroy_fn_releases_the_state_once_per_processor():
    states = []

    def create(ctx):
        states.append(Countdown(ctx, 20))
        return states[-1]

    def destroy(state):
        assert not state.destroyed
        state.destroyed = True

    source = SourceBuilder.stream("d", create).fill_buffer_fn(fill).destroy_fn(destroy).distributed(2).build()
    assert sorted(run(source)) == list(range(20))
    assert len(states) == 2 and all(state.destroyed for state in states)


def test_the_processor_is_non_cooperative_and_meets_the_processor_contract():
    source = SourceBuilder.stream("s", lambda ctx: Countdown(ctx, 30, per_fill=4)).fill_buffer_fn(fill).build()
    assert source.supplier().is_cooperative is False
    # Without snapshot functions a restored source starts afresh (tests/connectors/test_source_snapshots.py
    # has the ones with them).
    TestSupport.verify_processor(source.supplier).disable_snapshots().expect_output(list(range(30)))


def test_on_another_member_the_undistributed_source_emits_nothing_and_creates_nothing():
    created = []
    source = (SourceBuilder.stream("s", lambda ctx: created.append(ctx) or Countdown(ctx, 30))
              .fill_buffer_fn(fill).build())
    TestSupport.verify_processor(source.supplier).context(member_index=1, member_count=2).expect_output([])
    assert created == []


def test_a_timestamped_stream_without_an_event_time_policy_emits_bare_items():
    source = (SourceBuilder.timestamped_stream("ts", lambda ctx: Countdown(ctx, 10, per_fill=3))
              .fill_buffer_fn(fill_timestamped).build())
    assert source.native_timestamps and callable(source.policy_supplier)
    assert isinstance(source.policy_supplier(None)(), ConvenientSourceP)
    TestSupport.verify_processor(source.policy_supplier(None)).disable_snapshots() \
        .expect_output([f"event {i}" for i in range(10)])


def test_a_plain_stream_has_no_native_timestamps():
    source = SourceBuilder.stream("plain", lambda ctx: None).fill_buffer_fn(fill).build()
    assert not source.native_timestamps and source.policy_supplier is None


def test_a_timestamped_buffer_needs_a_timestamp():
    buffer = TimestampedSourceBuffer()
    with pytest.raises(TypeError, match=r"add\(item, timestamp_ms\)"):
        buffer.add("item")


def test_snapshot_functions_are_kept_for_fault_tolerance_and_must_come_together():
    builder = (SourceBuilder.stream("snap", lambda ctx: None).fill_buffer_fn(fill)
               .create_snapshot_fn(lambda state: 1))
    with pytest.raises(ValueError, match=r"SourceBuilder.stream\('snap'\).build\(\): create_snapshot_fn and "
                                         r"restore_snapshot_fn go together"):
        builder.build()
    assert builder.restore_snapshot_fn(lambda state, saved: None).build().name == "snap"


def test_builder_mistakes_name_the_step():
    with pytest.raises(ValueError, match=r"SourceBuilder.stream\('x'\).build\(\): fill_buffer_fn\(fn\) was not set"):
        SourceBuilder.stream("x", lambda ctx: None).build()
    with pytest.raises(TypeError, match=r"SourceBuilder.batch\('x'\).fill_buffer_fn needs a callable, got 3"):
        SourceBuilder.batch("x", lambda ctx: None).fill_buffer_fn(3)
    with pytest.raises(TypeError, match=r"SourceBuilder.timestamped_stream\('x'\): create_fn needs a callable"):
        SourceBuilder.timestamped_stream("x", "state")
    with pytest.raises(ValueError, match=r"SourceBuilder.stream\('x'\).distributed needs an int >= 1"):
        SourceBuilder.stream("x", lambda ctx: None).distributed(0)
    with pytest.raises(TypeError, match=r"destroy_fn needs a callable"):
        SourceBuilder.stream("x", lambda ctx: None).destroy_fn(None)
    with pytest.raises(ValueError, match="needs a non-empty name"):
        SourceBuilder.batch("", lambda ctx: None)
    with pytest.raises(ValueError, match=r"SourceBuilder.batch\('x'\).build\(\): create_snapshot_fn and "
                                         r"restore_snapshot_fn are for stream sources only"):
        SourceBuilder.batch("x", lambda ctx: None).fill_buffer_fn(fill).create_snapshot_fn(lambda state: 1).build()


# -- in a stream pipeline --------------------------------------------------------------------------
def events_of_keys(n: int = 600, span_ms: int = 2000) -> list[tuple[int, str]]:
    """``n`` events (timestamp, key) in time order over ``span_ms``, a few keys."""
    return [(i * span_ms // n, "abc"[i * 7 % 3]) for i in range(n)]


class EventFeed:
    """A timestamped source's state: its processor's share of the events, 25 per fill."""

    def __init__(self, context, events: list) -> None:
        self.pending = events[context.global_index::context.total_parallelism]


def fill_events(feed: EventFeed, buffer) -> None:
    taken, feed.pending = feed.pending[:25], feed.pending[25:]
    for event in taken:
        buffer.add(event, event[0])
    if not feed.pending:
        buffer.close()


def fill_events_without_timestamps(feed: EventFeed, buffer) -> None:
    taken, feed.pending = feed.pending[:25], feed.pending[25:]
    for event in taken:
        buffer.add(event)
    if not feed.pending:
        buffer.close()


@pytest.mark.parametrize("members", [1, 2])
@pytest.mark.parametrize("kind", ["timestamped_stream", "stream"])
def test_streams_that_close_give_exact_window_results_in_a_pipeline(members, kind):
    from jet import AggregateOperations, Pipeline, Sinks, WindowDefinition

    from tests.pipeline.stream_support import sliding_counts
    from tests.pipeline.support import run_pipeline

    events = events_of_keys()
    fill_fn = fill_events if kind == "timestamped_stream" else fill_events_without_timestamps
    source = (getattr(SourceBuilder, kind)("events", lambda ctx: EventFeed(ctx, events))
              .fill_buffer_fn(fill_fn).distributed(2).build())
    p = Pipeline.create()
    stage = p.read_from(source)
    stream = (stage.with_native_timestamps(10) if kind == "timestamped_stream"
              else stage.with_timestamps(lambda event: event[0], 10))
    stream.grouping_key(lambda event: event[1]).window(WindowDefinition.tumbling(100)) \
        .aggregate(AggregateOperations.counting()).write_to(Sinks.list("counts"))
    stream.map(lambda event: event[0]).write_to(Sinks.list("bare"))
    results = run_pipeline(p, members)
    assert sorted(results["counts"]) == sliding_counts(events, lambda e: e[0], lambda e: e[1], 100, 100)
    assert sorted(results["bare"]) == sorted(ts for ts, _ in events)
