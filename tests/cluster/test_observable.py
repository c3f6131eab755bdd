"""Observable results: ``Sinks.observable(name)`` on the members, ``job.observable(name)`` on a client."""

from __future__ import annotations

import logging
import threading
from itertools import islice

import jet
import pytest
from jet import Sinks, SourceBuilder, Sources
from jet.cluster.client import Job
from jet.cluster.executions.observables import (
    ObservableBuffer,
    ObservableIterator,
    ObservableStore,
    UnknownObservableError,
)
from jet.core import DAG, Edge
from jet.execution.errors import JobCancelledError, JobFailedError

TIMEOUT_S = 60


class Share:
    """A source's state: its processor's share of range(total), 50 per fill; ``fail_after`` fills
    then it raises."""

    def __init__(self, context, total: int, fail_after: int | None = None) -> None:
        self.pending = list(range(context.global_index, total, context.total_parallelism))
        self.fills_left = fail_after


def fill_share(state: Share, buffer) -> None:
    if state.fills_left is not None:
        if state.fills_left == 0:
            raise RuntimeError("the feed broke")
        state.fills_left -= 1
    taken, state.pending = state.pending[:50], state.pending[50:]
    for item in taken:
        buffer.add(item)
    if not state.pending:
        buffer.close()


def shares(total: int, fail_after: int | None = None):
    return (SourceBuilder.stream("shares", lambda ctx: Share(ctx, total, fail_after))
            .fill_buffer_fn(fill_share).distributed(1).build())


def observed_dag(source, sink) -> DAG:
    dag = DAG()
    source_vertex = dag.new_vertex(source.name, source.supplier, source.local_parallelism)
    sink_vertex = dag.new_vertex(sink.name, sink.supplier, sink.local_parallelism)
    dag.edge(Edge.between(source_vertex, sink_vertex))
    return dag


# -- the buffer on member 0 -----------------------------------------------------------------------
def test_the_buffer_keeps_the_newest_items_and_a_reader_behind_is_told_how_many_it_lost():
    buffer = ObservableBuffer(capacity=5)
    for start in range(0, 12, 3):
        buffer.append(list(range(start, start + 3)))
    assert (buffer.head, buffer.tail) == (7, 12)
    assert buffer.read(0, 100) == ([7, 8, 9, 10, 11], 12, 7)
    assert buffer.read(9, 2) == ([9, 10], 11, 0)
    assert buffer.read(12, 100) == ([], 12, 0)


def test_a_read_waits_for_items_and_says_ended_only_once_everything_was_read():
    store = ObservableStore()
    ended = threading.Event()
    store.publish("job", "out", 100, [1, 2, 3])
    assert store.read("job", "out", 0, 2, 0.0, ended.is_set) == ([1, 2], 2, 0, False)
    ended.set()
    assert store.read("job", "out", 2, 10, 0.0, ended.is_set) == ([3], 3, 0, True)
    assert store.read("job", "out", 3, 10, 5.0, ended.is_set) == ([], 3, 0, True)
    assert store.read("job", "other", 0, 10, 0.0, ended.is_set) == ([], 0, 0, True)
    threading.Timer(0.05, store.publish, ("job", "late", 100, ["x"])).start()
    assert store.read("job", "late", 0, 10, TIMEOUT_S, lambda: False) == (["x"], 1, 0, False)


def test_the_iterator_yields_every_item_then_raises_the_failure_of_its_job(caplog):
    replies = iter([({"next": 2, "lost": 0}, ["a", "b"]),
                    ({"next": 5, "lost": 2}, ["e"]),
                    ({"next": 5, "lost": 0, "ended": True, "job": {"status": "FAILED"}}, [])])
    iterator = ObservableIterator(lambda sequence: next(replies), "out",
                                  lambda job: JobFailedError("job x failed: boom"))
    with caplog.at_level(logging.WARNING, "jet.cluster.executions.observables"):
        assert list(islice(iterator, 3)) == ["a", "b", "e"]
        with pytest.raises(JobFailedError, match="boom"):
            next(iterator)
    assert iterator.lost == 2 and "2 items were overwritten" in caplog.text
    with pytest.raises(StopIteration):
        next(iterator)


# -- on a cluster ---------------------------------------------------------------------------------
def test_every_member_s_results_reach_every_reader_and_the_iteration_ends_with_the_job(cluster2):
    job = cluster2.new_job(observed_dag(shares(3000), Sinks.observable("out")))
    with jet.connect(cluster2.addresses, token=cluster2.token, tls=cluster2.tls) as other_client:
        second_reader = Job(other_client, job.id, job.name).observable("out")
        first = list(job.observable("out"))
        second = list(second_reader)
    assert sorted(first) == list(range(3000))
    assert second == first  # both read the one buffer on member 0, in its order
    job.join(TIMEOUT_S)


def test_a_failed_job_ends_the_iteration_with_its_error(cluster2):
    job = cluster2.new_job(observed_dag(shares(100_000, fail_after=3), Sinks.observable("out")))
    seen = []
    with pytest.raises(JobFailedError, match="the feed broke"):
        for item in job.observable("out"):
            seen.append(item)
    assert len(seen) <= 2 * 3 * 50 and len(set(seen)) == len(seen)


def test_a_cancelled_stream_ends_the_iteration_with_the_cancellation(cluster2):
    job = cluster2.new_job(observed_dag(Sources.item_stream(2000), Sinks.observable("events")))
    events = job.observable("events")
    first = list(islice(events, 100))
    assert all(isinstance(event, jet.SimpleEvent) for event in first)
    job.cancel()
    with pytest.raises(JobCancelledError):
        for _ in events:
            pass


def test_a_reader_further_behind_than_the_capacity_gets_the_newest_items(cluster2):
    job = cluster2.new_job(observed_dag(shares(1000), Sinks.observable("small", capacity=10)))
    job.join(TIMEOUT_S)
    reader = job.observable("small")
    items = list(reader)
    assert len(items) == 10 and set(items) <= set(range(1000))
    assert reader.lost == 990


def test_asking_for_an_observable_the_job_does_not_have_names_the_ones_it_has(cluster2):
    job = cluster2.new_job(observed_dag(shares(10), Sinks.observable("out")))
    with pytest.raises(UnknownObservableError, match=r"has no observable named 'nope'; its observables are \['out'\]"):
        job.observable("nope")
    job.join(TIMEOUT_S)


def test_observable_arguments_are_checked():
    with pytest.raises(ValueError, match="needs a non-empty name"):
        Sinks.observable("")
    with pytest.raises(ValueError, match=r"capacity must be an int >= 1 .*got 0"):
        Sinks.observable("x", capacity=0)


def test_an_observable_sink_outside_a_cluster_says_it_needs_one():
    from jet.execution import execute
    with pytest.raises(JobFailedError, match="observables need a cluster"):
        execute(observed_dag(shares(10), Sinks.observable("out")), timeout=TIMEOUT_S)


def test_window_results_of_an_item_stream_arrive_as_the_windows_close(cluster2):
    """1,000 events/s split over both members: each processor's events are due at whole
    milliseconds after its start, so every 100 ms window after both started holds exactly 100."""
    p = jet.Pipeline.create()
    (p.read_from(Sources.item_stream(1000)).with_native_timestamps(0)
     .window(jet.WindowDefinition.tumbling(100)).aggregate(jet.AggregateOperations.counting())
     .write_to(Sinks.observable("counts")))
    job = cluster2.new_job(p)
    try:
        results = list(islice(job.observable("counts"), 11))
    finally:
        job.cancel()
    whole = results[5:]  # the first windows may begin before a source started (members start apart)
    assert all(isinstance(r, jet.WindowResult) and r.end - r.start == 100 for r in results)
    assert [r.start for r in whole] == list(range(whole[0].start, whole[0].start + 600, 100))
    assert [r.result for r in whole] == [100] * 6
