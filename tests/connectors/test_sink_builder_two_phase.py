"""SinkBuilder's transaction functions through the two snapshot phases.

The external system is a plain-Python store: items are staged per processor, sealed into
batches by ``prepare_fn`` and published by ``commit_fn``; the published items are compared with
an oracle of what should be there exactly once. A crash is a processor abandoned without
``close()`` and a new instance restored from the entries of the last snapshot.
"""

from __future__ import annotations

from collections import Counter

import pytest

from jet import SinkBuilder, Sources
from jet.core import DAG, Edge
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.execution import execute
from jet.job_config import ProcessingGuarantee

EXACTLY_ONCE = ProcessingGuarantee.EXACTLY_ONCE


class Store:
    """A database with staging: sealed batches become visible only when published."""

    def __init__(self) -> None:
        self.staged: dict[int, list] = {}
        self.sealed: dict[tuple, list] = {}
        self.published: list = []
        self.published_ids: set = set()
        self.aborted = 0

    def visible(self) -> Counter:
        return Counter(self.published)


class Writer:
    """One sink processor's connection to the store."""

    def __init__(self, store: Store, index: int) -> None:
        self.store, self.index, self.batches = store, index, 0
        store.staged[index] = []  # an earlier run's unsealed items are discarded

    def stage(self, item) -> None:
        self.store.staged[self.index].append(item)

    def seal(self):
        items, self.store.staged[self.index] = self.store.staged[self.index], []
        if not items:
            return None
        batch = (self.index, id(self), self.batches)
        self.batches += 1
        self.store.sealed[batch] = items
        return batch

    def publish(self, batch) -> None:
        if batch not in self.store.published_ids:  # idempotent
            self.store.published_ids.add(batch)
            self.store.published.extend(self.store.sealed.pop(batch))

    def drop_unsealed(self) -> None:
        self.store.aborted += len(self.store.staged[self.index])
        self.store.staged[self.index] = []


def store_sink(store: Store, parallelism: int = 1):
    return (SinkBuilder.sink("store", lambda ctx: Writer(store, ctx.global_index))
            .receive_fn(Writer.stage)
            .transaction_fns(Writer.seal, Writer.publish, Writer.drop_unsealed)
            .preferred_local_parallelism(parallelism)
            .build())


def start(sink, index: int = 0, parallelism: int = 1, restore: list | None = None, guarantee=EXACTLY_ONCE):
    processor = sink.supplier()
    processor.init(Outbox(0), Context(vertex_name="store", local_index=index, local_parallelism=parallelism,
                                      processing_guarantee=guarantee))
    if restore is not None:
        inbox = Inbox()
        inbox.add_chunk(list(restore))
        processor.restore_from_snapshot(inbox)
        assert inbox.is_empty() and processor.finish_snapshot_restore()
    return processor


def feed(processor, items) -> None:
    inbox = Inbox()
    inbox.add_chunk(list(items))
    processor.process(0, inbox)


def phase1(processor) -> list:
    assert processor.save_to_snapshot() and processor.snapshot_commit_prepare()
    entries, processor.outbox.snapshot_entries = processor.outbox.snapshot_entries, []
    return entries


def test_nothing_is_published_before_phase_2_and_everything_once_after():
    store = Store()
    sink = start(store_sink(store))
    feed(sink, range(10))
    feed(sink, range(10, 20))
    entries = phase1(sink)
    assert store.visible() == Counter() and len(entries) == 1
    feed(sink, range(20, 25))  # after the barrier: the next snapshot's
    sink.snapshot_commit_finish(True)
    assert store.visible() == Counter(range(20))
    assert sink.complete()
    sink.close()
    assert store.visible() == Counter(range(25)) and store.aborted == 0


def test_a_restore_commits_the_prepared_batches_and_the_replay_completes_the_output():
    store = Store()
    sink = start(store_sink(store))
    feed(sink, range(30))
    entries = phase1(sink)
    feed(sink, range(30, 40))  # lost with the crash: the restored source replays it
    restored = start(store_sink(store), restore=entries)
    assert store.visible() == Counter(range(30))
    feed(restored, range(30, 50))
    phase1(restored)
    restored.snapshot_commit_finish(True)
    restored.close()
    assert store.visible() == Counter(range(50))


def test_a_restore_after_phase_2_publishes_nothing_twice():
    store = Store()
    sink = start(store_sink(store))
    feed(sink, "abc")
    entries = phase1(sink)
    sink.snapshot_commit_finish(True)
    start(store_sink(store), restore=entries).close()
    assert store.visible() == Counter("abc")


def test_a_restore_into_fewer_processors_commits_every_processors_batches():
    store = Store()
    items = list(range(60))
    sinks = [start(store_sink(store, 3), index=i, parallelism=3) for i in range(3)]
    for i, sink in enumerate(sinks):
        feed(sink, items[i::3][:15])
    entries = [entry for sink in sinks for entry in phase1(sink)]
    survivors = [start(store_sink(store, 2), index=i, parallelism=2, restore=entries) for i in range(2)]
    assert store.visible() == Counter(x for i in range(3) for x in items[i::3][:15])
    rest = [x for i in range(3) for x in items[i::3][15:]]
    feed(survivors[0], rest[:7])
    feed(survivors[1], rest[7:])
    for survivor in survivors:
        survivor.complete()
        survivor.close()
    assert store.visible() == Counter(items)


def test_a_failed_snapshot_keeps_its_batches_for_the_next_one():
    store = Store()
    sink = start(store_sink(store))
    feed(sink, [1])
    phase1(sink)
    sink.snapshot_commit_finish(False)
    feed(sink, [2])
    entries = phase1(sink)
    assert len(entries) == 2 and store.visible() == Counter()
    sink.snapshot_commit_finish(True)
    sink.close()
    assert store.visible() == Counter([1, 2])


def test_a_job_ending_without_completing_aborts_what_was_not_prepared():
    store = Store()
    sink = start(store_sink(store))
    feed(sink, [1, 2])
    phase1(sink)
    feed(sink, [3])
    sink.close()
    assert store.aborted == 1 and store.staged[0] == []


@pytest.mark.parametrize("guarantee", [ProcessingGuarantee.NONE, ProcessingGuarantee.AT_LEAST_ONCE])
def test_without_exactly_once_each_batch_is_committed_after_its_flush(guarantee):
    store = Store()
    sink = start(store_sink(store), guarantee=guarantee)
    feed(sink, [1, 2])
    assert store.visible() == Counter([1, 2])
    assert phase1(sink) == []
    sink.close()


def test_a_job_writes_every_item_once_through_the_transaction_functions():
    store = Store()
    sink = store_sink(store, parallelism=3)
    dag = DAG()
    source = dag.new_vertex("items", Sources.items(range(1000)).supplier, 2)
    vertex = dag.new_vertex(sink.name, sink.supplier, sink.local_parallelism)
    dag.edge(Edge.between(source, vertex))
    execute(dag, timeout=30)
    assert store.visible() == Counter(range(1000))


def test_transaction_functions_must_be_callable():
    builder = SinkBuilder.sink("s", lambda ctx: None).receive_fn(lambda s, i: None)
    with pytest.raises(TypeError, match=r"transaction_fns: commit_fn"):
        builder.transaction_fns(lambda s: None, "publish")
