"""The transaction pool through the two snapshot phases, restores and failures.

The resource is a small in-memory transactional store with the semantics the pool relies on
(an open or prepared transaction is invisible, commit is idempotent, abort of an unknown id is
a no-op); each test checks what became visible against a plain list of the rows that should be
there exactly once.
"""

from __future__ import annotations

import pytest

from jet.connectors.transaction_pool import TransactionPool, default_prefix, transaction_id
from jet.core.outbox import Outbox
from jet.core.processor import Context


class Store:
    """A transactional store shared by every processor: rows become visible at commit."""

    def __init__(self) -> None:
        self.open: dict[str, list] = {}
        self.prepared: dict[str, list] = {}
        self.visible: list = []
        self.calls: list[tuple[str, str]] = []


class StoreResource:
    """One processor's connection to the store, as a TransactionalResource."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def begin(self, txn_id: str) -> None:
        assert txn_id not in self.store.open and txn_id not in self.store.prepared, f"{txn_id} still in use"
        self.store.open[txn_id] = []
        self.store.calls.append(("begin", txn_id))

    def write(self, txn_id: str, row) -> None:
        self.store.open[txn_id].append(row)

    def prepare(self, txn_id: str):
        self.store.prepared[txn_id] = self.store.open.pop(txn_id)
        self.store.calls.append(("prepare", txn_id))
        return ("state-of", txn_id)

    def commit(self, txn_id: str, state) -> None:
        assert state == ("state-of", txn_id)
        self.store.calls.append(("commit", txn_id))
        self.store.visible.extend(self.store.prepared.pop(txn_id, []))  # idempotent: gone once committed

    def abort(self, txn_ids: list[str]) -> None:
        for txn_id in txn_ids:
            self.store.open.pop(txn_id, None)
            self.store.prepared.pop(txn_id, None)
            self.store.calls.append(("abort", txn_id))


class SinkUnderTest:
    """The part of a sink processor that drives the pool, as a transactional sink does."""

    def __init__(self, store: Store, index: int = 0, total: int = 1, restore: list | None = None) -> None:
        self.context = Context(vertex_name="sink", job_id="job1", local_index=index, local_parallelism=total)
        self.resource = StoreResource(store)
        self.pool = TransactionPool(self.resource, self.context, default_prefix(self.context, "test"))
        self.outbox = Outbox(0)
        if restore is not None:
            for key, value in restore:
                assert self.pool.is_pool_key(key)
                self.pool.restore_entry(key, value)
            self.pool.finish_snapshot_restore()

    def write(self, *rows) -> None:
        for row in rows:
            self.resource.write(self.pool.active_id(), row)

    def phase1(self) -> list:
        self.pool.snapshot_commit_prepare(self.outbox)
        entries, self.outbox.snapshot_entries = self.outbox.snapshot_entries, []
        return entries


def test_ids_are_deterministic_per_job_vertex_index_and_slot():
    context = Context(vertex_name="out", job_id="j7", local_index=1, local_parallelism=2, member_index=1,
                      member_count=2)
    assert default_prefix(context, "kafka") == "jet-kafka-j7-out"
    assert transaction_id("p", 3, 1) == "p-3-1"
    pool = TransactionPool(StoreResource(Store()), context, "p")
    assert pool.id_of(0) == "p-3-0"
    # indices 3, 7, 11, 15, 19 (below 5 x 4), four slots each
    assert pool.probed_ids() == [f"p-{i}-{s}" for i in (3, 7, 11, 15, 19) for s in range(4)]


def test_nothing_is_visible_before_phase_2_and_each_row_once_after():
    store = Store()
    sink = SinkUnderTest(store)
    sink.write(1, 2)
    entries = sink.phase1()
    sink.write(3)  # after the barrier: the next transaction, another slot
    assert store.visible == []
    assert [key.key for key, _ in entries] == [("txn-pool", 0, 0)]
    sink.pool.snapshot_commit_finish(True)
    assert store.visible == [1, 2]
    sink.phase1()
    sink.pool.snapshot_commit_finish(True)
    assert store.visible == [1, 2, 3]


def test_a_fresh_start_aborts_what_an_earlier_execution_left_open():
    store = Store()
    crashed = SinkUnderTest(store)
    crashed.write("lost")  # never prepared, the process dies
    crashed.phase1()  # prepared, but the snapshot never completed (no phase 2)
    crashed.write("lost too")
    fresh = SinkUnderTest(store)
    fresh.write("new")
    assert store.open == {"jet-test-job1-sink-0-0": ["new"]}
    assert store.prepared == {}
    fresh.pool.complete()
    assert store.visible == ["new"]


def test_a_restore_commits_what_the_snapshot_prepared_and_aborts_the_rest():
    store = Store()
    first = SinkUnderTest(store)
    first.write(1, 2)
    snapshot = first.phase1()
    first.write(3)  # open when the job is lost; the restored source replays it
    restored = SinkUnderTest(store, restore=snapshot)
    assert store.visible == [1, 2]
    assert store.open == {} and store.prepared == {}
    restored.write(3)
    restored.pool.complete()
    assert store.visible == [1, 2, 3]


def test_a_restore_after_phase_2_ran_commits_nothing_twice():
    store = Store()
    first = SinkUnderTest(store)
    first.write(1)
    snapshot = first.phase1()
    first.pool.snapshot_commit_finish(True)
    SinkUnderTest(store, restore=snapshot)
    assert store.visible == [1]


def test_a_restore_on_fewer_processors_commits_every_prepared_transaction():
    store = Store()
    old = [SinkUnderTest(store, index, 3) for index in range(3)]
    snapshot = []
    for index, sink in enumerate(old):
        sink.write(f"row{index}")
        snapshot += sink.phase1()
        sink.write(f"unprepared{index}")
    new = [SinkUnderTest(store, index, 2, restore=snapshot) for index in range(2)]
    assert sorted(store.visible) == ["row0", "row1", "row2"]
    assert store.open == {} and store.prepared == {}  # index 2's open one was probed by processor 0
    assert ("abort", "jet-test-job1-sink-2-0") in store.calls
    assert new[0].pool.id_of(0) == "jet-test-job1-sink-0-0"


def test_a_failed_snapshot_keeps_its_transaction_for_the_next_one():
    store = Store()
    sink = SinkUnderTest(store)
    sink.write(1)
    sink.phase1()
    sink.pool.snapshot_commit_finish(False)
    sink.write(2)
    entries = sink.phase1()
    assert sorted(key.key[2] for key, _ in entries) == [0, 1]
    assert store.visible == []
    sink.pool.snapshot_commit_finish(True)
    assert sorted(store.visible) == [1, 2]


def test_too_many_failed_snapshots_in_a_row_stop_the_sink_clearly():
    store = Store()
    sink = SinkUnderTest(store)
    for row in range(4):
        sink.write(row)
        sink.phase1()
        sink.pool.snapshot_commit_finish(False)
    with pytest.raises(RuntimeError, match="snapshots keep failing"):
        sink.write(4)


def test_close_aborts_the_active_transaction_and_leaves_prepared_ones():
    store = Store()
    sink = SinkUnderTest(store)
    sink.write(1)
    sink.phase1()
    sink.write(2)
    sink.pool.close()
    assert store.open == {}
    assert list(store.prepared.values()) == [[1]]
