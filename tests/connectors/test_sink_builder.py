"""SinkBuilder: a sink from receive, flush and destroy functions (Jet's WriteBufferedP)."""

from __future__ import annotations

import pytest

from jet import SinkBuilder, Sources
from jet.core import DAG, Edge
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport
from jet.execution import execute


class Recorder:
    """A sink's state: what it received, how often it flushed, whether it was destroyed."""

    def __init__(self, context) -> None:
        self.index = context.global_index
        self.received: list = []
        self.flushed_counts: list[int] = []
        self.destroyed = 0


def built_sink(states: list, parallelism: int = 1):
    def create(context):
        states.append(Recorder(context))
        return states[-1]

    return (SinkBuilder.sink("recorder", create)
            .receive_fn(lambda state, item: state.received.append(item))
            .flush_fn(lambda state: state.flushed_counts.append(len(state.received)))
            .destroy_fn(lambda state: setattr(state, "destroyed", state.destroyed + 1))
            .preferred_local_parallelism(parallelism)
            .build())


def test_each_item_reaches_receive_fn_once_and_flush_follows_every_batch():
    states: list = []
    sink = built_sink(states, parallelism=3)
    dag = DAG()
    source = dag.new_vertex("items", Sources.items(range(1000)).supplier, 2)
    vertex = dag.new_vertex(sink.name, sink.supplier, sink.local_parallelism)
    dag.edge(Edge.between(source, vertex))
    execute(dag, timeout=30)
    assert sorted(item for state in states for item in state.received) == list(range(1000))
    assert sorted(state.index for state in states) == [0, 1, 2]
    for state in states:
        assert state.destroyed == 1
        # every item is flushed: the last flush saw all of them, and flushes only grow
        assert state.flushed_counts[-1:] == [len(state.received)] or not state.received
        assert state.flushed_counts == sorted(state.flushed_counts)


def test_the_sink_ignores_watermarks_emits_nothing_and_is_non_cooperative():
    states: list = []
    sink = built_sink(states)
    assert sink.supplier().is_cooperative is False
    # Without snapshots: each run's instances are counted below (a restore would add instances).
    TestSupport.verify_processor(sink.supplier).input([1, 2, Watermark(10), 3]).disable_snapshots() \
        .expect_output([])
    assert [state.received for state in states] == [[1, 2, 3], [1, 2, 3]]  # the harness runs it twice
    assert all(state.destroyed == 1 and state.flushed_counts[-1] == 3 for state in states)


def test_builder_mistakes_name_the_step():
    with pytest.raises(ValueError, match=r"SinkBuilder.sink\('s'\).build\(\): receive_fn\(fn\) was not set"):
        SinkBuilder.sink("s", lambda ctx: None).build()
    with pytest.raises(TypeError, match=r"SinkBuilder.sink\('s'\).flush_fn needs a callable, got 'x'"):
        SinkBuilder.sink("s", lambda ctx: None).flush_fn("x")
    with pytest.raises(TypeError, match=r"SinkBuilder.sink\('s'\): create_fn needs a callable"):
        SinkBuilder.sink("s", None)
    with pytest.raises(ValueError, match=r"preferred_local_parallelism needs an int >= 1 .*, got -2"):
        SinkBuilder.sink("s", lambda ctx: None).preferred_local_parallelism(-2)
    with pytest.raises(ValueError, match="needs a non-empty name"):
        SinkBuilder.sink(None, lambda ctx: None)
    assert SinkBuilder.sink("s", lambda ctx: None).receive_fn(print).build().local_parallelism == 1
