"""Snapshot barriers through edge streams and processor tasklets; a snapshot and a restore of a
running job on one member, checked against plain Python over the same numbers."""

import threading
import time

import pytest

from jet.core import DAG, Edge, EdgeConfig
from jet.core.inbox import Inbox
from jet.core.processor import Processor
from jet.core.snapshot_keys import BroadcastKey
from jet.core.special_items import DONE_ITEM, SnapshotBarrier
from jet.execution.inbound import InboundEdgeStream
from jet.execution.plan import ExecutionPlan, MemberTopology
from jet.execution.queues import SpscQueue
from jet.execution.service import TaskletExecutionService
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_portions import chunk_pickles
from jet.execution.snapshot_restore import route_restore_entries
from jet.execution.tasklet import DONE_BIT
from jet.job_config import ProcessingGuarantee


# -- alignment in one edge stream -----------------------------------------------------------------
def _drain_all(stream):
    inbox = Inbox()
    results = []
    while True:
        before = len(inbox)
        state = stream.drain_to(inbox)
        got_barrier = stream.pending_barrier
        stream.pending_barrier = None
        if got_barrier is not None:
            results.append(("items", list(inbox)))
            inbox.clear()
            results.append(("barrier", got_barrier.snapshot_id))
            continue
        if len(inbox) == before or state & DONE_BIT:
            break
    if inbox:
        results.append(("items", list(inbox)))
    return results


@pytest.mark.parametrize("exactly_once", [True, False])
def test_a_queue_that_delivered_the_barrier_waits_only_under_exactly_once(exactly_once):
    a, b = SpscQueue(16, "a"), SpscQueue(16, "b")
    stream = InboundEdgeStream(0, 0, [a, b], name="e", wait_for_all_barriers=exactly_once)
    a.offer_chunk(["a1"])
    a.offer_special(SnapshotBarrier(7))
    a.offer_chunk(["a2"])
    b.offer_chunk(["b1"])
    first = _drain_all(stream)
    drained = [item for kind, items in first if kind == "items" for item in items]
    # a2 comes after a's barrier: exactly-once holds it back until b delivers the barrier too.
    assert ("a2" in drained) is (not exactly_once)
    assert ("barrier", 7) not in first
    b.offer_special(SnapshotBarrier(7))
    b.offer_chunk(["b2"])
    second = _drain_all(stream)
    assert ("barrier", 7) in second
    before_barrier = second[:second.index(("barrier", 7))]
    after = [item for kind, items in second[second.index(("barrier", 7)):] if kind == "items" for item in items]
    assert all("b2" not in items for _, items in before_barrier if _ == "items")
    if exactly_once:
        assert sorted(after) == ["a2", "b2"]


def test_a_queue_ending_completes_the_alignment_of_the_others():
    a, b = SpscQueue(16, "a"), SpscQueue(16, "b")
    stream = InboundEdgeStream(0, 0, [a, b], name="e", wait_for_all_barriers=True)
    a.offer_special(SnapshotBarrier(3))
    a.offer_chunk(["late"])
    assert _drain_all(stream) == []
    b.offer_chunk(["b1"])
    b.offer_special(DONE_ITEM)
    result = _drain_all(stream)
    assert result[:2] == [("items", ["b1"]), ("barrier", 3)]
    assert ("items", ["late"]) in result


def test_a_terminal_barrier_aligns_even_under_at_least_once():
    a, b = SpscQueue(16, "a"), SpscQueue(16, "b")
    stream = InboundEdgeStream(0, 0, [a, b], name="e", wait_for_all_barriers=False)
    a.offer_special(SnapshotBarrier(1, is_terminal=True))
    a.offer_chunk(["after"])
    assert _drain_all(stream) == []


def test_a_newer_barrier_supersedes_one_still_being_aligned():
    a, b = SpscQueue(16, "a"), SpscQueue(16, "b")
    stream = InboundEdgeStream(0, 0, [a, b], name="e", wait_for_all_barriers=True)
    a.offer_special(SnapshotBarrier(1))
    a.offer_chunk(["a-between"])
    a.offer_special(SnapshotBarrier(2))
    b.offer_chunk(["b1"])
    b.offer_special(SnapshotBarrier(2))  # snapshot 1 was given up before b's source took it
    result = _drain_all(stream)
    assert ("barrier", 1) not in result
    assert ("barrier", 2) in result
    before = [x for kind, items in result[:result.index(("barrier", 2))] if kind == "items" for x in items]
    assert sorted(before) == ["a-between", "b1"]


class _Tasklet:
    def __init__(self, index):
        from jet.core.processor import Context
        self.context = Context(vertex_name="v", local_index=index, local_parallelism=2)


def test_a_save_that_comes_before_its_phase_reaches_the_member_is_kept_for_it():
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE)
    early, late = _Tasklet(0), _Tasklet(1)
    context.register(early, False)
    context.register(late, False)
    context.tasklet_saved(early, 0, "v", [("k", 1)])  # a barrier from another member came first
    chunks = Chunks()
    phase1 = context.start_phase1(0, False, chunks.writer(0))
    assert not phase1.done()
    context.tasklet_saved(late, 0, "v", [("j", 2)])
    assert phase1.result(timeout=5)["keys"] == 2
    assert sorted(chunks.entries[0]) == [("v", "j", 2), ("v", "k", 1)]


def test_a_snapshot_holds_the_state_as_it_was_saved_not_as_it_is_changed_after():
    """Entries were pickled later, on the writer thread: a window's list or a stateful map's
    object changed after the save (the next items) went into the snapshot, and exactly-once
    output came twice after a restore. The saving tasklet pickles them at once now."""
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE)
    tasklet = _Tasklet(0)
    context.register(tasklet, False)
    chunks, written = Chunks(), threading.Event()
    write = chunks.writer(0)
    phase1 = context.start_phase1(0, False, lambda *chunk: written.wait(5) and write(*chunk))
    window = ["a"]
    context.tasklet_saved(tasklet, 0, "v", [("window", window)])
    window.append("after the barrier")  # the processor goes on at once, before the writer writes
    written.set()
    phase1.result(timeout=5)
    assert chunks.entries[0] == [("v", "window", ["a"])]


def test_a_newer_snapshot_supersedes_one_that_never_completed():
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE)
    stuck = _Tasklet(0)
    context.register(stuck, False)
    chunks = Chunks()
    first = context.start_phase1(0, False, chunks.writer(0))
    second = context.start_phase1(1, False, chunks.writer(1))
    with pytest.raises(Exception, match="superseded"):
        first.result(timeout=5)
    context.tasklet_saved(stuck, 0, "v", [("old", 0)])  # its barrier 0 was still in flight: dropped
    context.tasklet_saved(stuck, 1, "v", [("new", 1)])
    assert second.result(timeout=5)["keys"] == 1
    assert chunks.entries == {1: [("v", "new", 1)]}


# -- a job on one member: snapshot, crash, restore -----------------------------------------------
KEYS = 7


class Gate:
    """How far the sources may count; shared by the test and the processors (same process)."""

    def __init__(self, limit: int) -> None:
        self.allowed = 0
        self.limit = limit
        self.emitted = 0
        self.lock = threading.Lock()


PARTS = 6
"""The numbers are split into PARTS sequences (x % PARTS); each source processor owns some."""


class CountingSource(Processor):
    """Emits the numbers below the gate of the sequences it owns (part % total == own index),
    one sequence after another in steps; saves each sequence's next number under a broadcast
    key, so a restore on another parallelism continues every sequence exactly where it was."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def init(self, outbox, context):
        super().init(outbox, context)
        self.next = {part: part for part in range(PARTS)
                     if part % context.total_parallelism == context.global_index}

    def complete(self) -> bool:
        gate = self.gate
        bound = min(gate.allowed, gate.limit)
        for part, x in self.next.items():
            while x < bound:
                if not self.outbox.offer(x):
                    self.next[part] = x
                    return False
                x += PARTS
                with gate.lock:
                    gate.emitted += 1
            self.next[part] = x
        return all(x >= gate.limit for x in self.next.values())

    def save_to_snapshot(self) -> bool:
        for part, x in self.next.items():
            self.outbox.offer_to_snapshot(BroadcastKey(("part", part)), x)
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while inbox:
            key, value = inbox.poll()
            part = key.key[1]
            if part in self.next:
                self.next[part] = value


class RunningCount(Processor):
    """Per key x % KEYS: emits (key, x, how many items of the key it has seen so far)."""

    def init(self, outbox, context):
        super().init(outbox, context)
        self.counts = {}
        self.pending = None

    def process(self, ordinal, inbox) -> None:
        while inbox:
            if self.pending is None:
                x = inbox.peek()
                key = x % KEYS
                self.counts[key] = self.counts.get(key, 0) + 1
                self.pending = (key, x, self.counts[key])
            if not self.outbox.offer(self.pending):
                return
            self.pending = None
            inbox.remove()

    def save_to_snapshot(self) -> bool:
        for key, count in self.counts.items():
            self.outbox.offer_to_snapshot(key, count)
        return True

    def restore_from_snapshot(self, inbox) -> None:
        while inbox:
            key, count = inbox.poll()
            self.counts[key] = count


class TwoPhaseListSink(Processor):
    """Items since the last snapshot are prepared at the snapshot and committed in phase 2 into
    ``committed[(index, snapshot)]``; a restore commits what the snapshot had prepared."""

    def __init__(self, committed: dict) -> None:
        self.committed = committed

    def init(self, outbox, context):
        super().init(outbox, context)
        self.open = []
        self.prepared = {}

    def process(self, ordinal, inbox) -> None:
        self.open.extend(inbox.take_chunk())

    def save_to_snapshot(self) -> bool:
        return True

    def snapshot_commit_prepare(self) -> bool:
        snapshot = len(self.prepared) + self._restored_txns
        txn = (self.context.global_index, snapshot)
        self.prepared[txn] = self.open
        self.open = []
        self.outbox.offer_to_snapshot(BroadcastKey(txn), self.prepared[txn])
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            for txn, items in self.prepared.items():
                self.committed.setdefault(txn, items)
        return True

    _restored_txns = 0

    def restore_from_snapshot(self, inbox) -> None:
        while inbox:
            key, items = inbox.poll()
            index, _ = key.key
            if index == self.context.global_index:
                self.committed.setdefault(key.key, items)  # commit what the snapshot prepared
                self._restored_txns = max(self._restored_txns, key.key[1] + 1)

    def complete(self) -> bool:
        self.committed[(self.context.global_index, "end")] = self.open
        return True


def counting_dag(gate: Gate, committed: dict, sources: int = 2, counters: int = 3) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: CountingSource(gate), sources)
    count = dag.new_vertex("count", RunningCount, counters)
    sink = dag.new_vertex("sink", lambda: TwoPhaseListSink(committed), 2)
    dag.edge(Edge.between(source, count).partitioned(lambda x: x % KEYS).distributed())
    dag.edge(Edge.between(count, sink))
    return dag


def _wait_for(condition, what, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class Chunks:
    """An in-memory snapshot store of one job: entries per snapshot id."""

    def __init__(self) -> None:
        self.entries: dict[int, list] = {}

    def writer(self, snapshot_id):
        def write(vertex, sequence, chunk, group):  # the chunk the tasklet pickled: (vertex, entries)...
            for _, entries in chunk_pickles(chunk):
                self.entries.setdefault(snapshot_id, []).extend((vertex, k, v) for k, v in entries)
            return len(chunk)
        return write


def _snapshot(context: SnapshotContext, chunks: Chunks, snapshot_id: int) -> dict:
    result = context.start_phase1(snapshot_id, False, chunks.writer(snapshot_id)).result(timeout=20)
    context.start_phase2(snapshot_id, True).result(timeout=20)
    return result


def _start(dag, guarantee, service, restore=None, first_snapshot_id=0):
    context = SnapshotContext(guarantee, first_snapshot_id=first_snapshot_id)
    plan = ExecutionPlan(dag, snapshot_context=context, topology=MemberTopology())
    if restore is not None:
        plan.restore_entries = route_restore_entries(restore, dag, plan.local_parallelism, plan.topology)
    future = service.submit(plan.build(), "job")
    return context, future


def _check_exactly_once(committed: dict, limit: int) -> None:
    outputs = [item for items in committed.values() for item in items]
    numbers = sorted(x for _, x, _ in outputs)
    assert numbers == list(range(limit)), "every number exactly once"
    per_key: dict[int, list] = {}
    for key, x, count in outputs:
        assert key == x % KEYS
        per_key.setdefault(key, []).append(count)
    for key, counts in per_key.items():
        expected = sum(1 for x in range(limit) if x % KEYS == key)
        assert sorted(counts) == list(range(1, expected + 1)), f"running counts of key {key}"


@pytest.mark.parametrize("counters_after,crash_before_phase2", [(3, False), (1, False), (2, True)])
def test_a_job_restored_from_its_snapshot_after_a_crash_counts_every_item_exactly_once(counters_after,
                                                                                       crash_before_phase2):
    limit = 6000
    service = TaskletExecutionService(1)
    try:
        gate, committed = Gate(limit), {}
        context, future = _start(counting_dag(gate, committed), ProcessingGuarantee.EXACTLY_ONCE, service)
        gate.allowed = 2000
        _wait_for(lambda: gate.emitted >= 2000, "the first 2000 numbers")
        chunks = Chunks()
        if crash_before_phase2:  # prepared everywhere, committed nowhere: the restore must commit
            result = context.start_phase1(0, False, chunks.writer(0)).result(timeout=20)
        else:
            result = _snapshot(context, chunks, 0)
        assert result["keys"] > 0
        gate.allowed = 4000
        _wait_for(lambda: gate.emitted >= 4000, "4000 numbers")
        time.sleep(0.05)
        future.cancel("simulated crash")  # everything after snapshot 0 is lost
        assert future.wait(10)
        lost = {txn: items for txn, items in committed.items()}
        gate2 = Gate(limit)
        gate2.allowed = limit
        dag = counting_dag(gate2, committed, counters=counters_after)
        context2, future2 = _start(dag, ProcessingGuarantee.EXACTLY_ONCE, service, restore=chunks.entries[0],
                                   first_snapshot_id=1)
        future2.result(30)
        assert bool(lost) is not crash_before_phase2  # what phase 2 of snapshot 0 committed
        _check_exactly_once(committed, limit)
    finally:
        service.shutdown()


def test_snapshots_while_running_commit_only_what_each_snapshot_covers():
    limit = 5000
    service = TaskletExecutionService(1)
    try:
        gate, committed = Gate(limit), {}
        context, future = _start(counting_dag(gate, committed), ProcessingGuarantee.EXACTLY_ONCE, service)
        chunks = Chunks()
        for snapshot_id, allowed in enumerate((1000, 2500, 4000)):
            gate.allowed = allowed
            _wait_for(lambda: gate.emitted >= allowed, f"{allowed} numbers")
            _snapshot(context, chunks, snapshot_id)
            committed_numbers = sorted(x for items in committed.values() for _, x, _ in items)
            # Whatever is committed is a prefix of each source's sequence: nothing beyond a barrier.
            assert len(committed_numbers) == len(set(committed_numbers))
            assert len(committed_numbers) <= allowed
        gate.allowed = limit
        future.result(30)
        _check_exactly_once(committed, limit)
    finally:
        service.shutdown()


def test_a_terminal_snapshot_ends_the_execution_without_completing_the_processors():
    limit = 10**9
    service = TaskletExecutionService(1)
    try:
        gate, committed = Gate(limit), {}
        context, future = _start(counting_dag(gate, committed), ProcessingGuarantee.EXACTLY_ONCE, service)
        gate.allowed = 1500
        _wait_for(lambda: gate.emitted >= 1500, "1500 numbers")
        chunks = Chunks()
        context.start_phase1(0, True, chunks.writer(0)).result(timeout=20)
        context.start_phase2(0, True).result(timeout=20)
        future.result(20)  # ends on its own after the terminal snapshot
        assert not any(txn[1] == "end" for txn in committed), "complete() must not run after a terminal snapshot"
        assert sorted(x for items in committed.values() for _, x, _ in items) == list(range(1500))
    finally:
        service.shutdown()


def test_restore_routes_keyed_entries_to_the_owner_and_broadcast_entries_to_all():
    dag = DAG()
    src = dag.new_vertex("src", Processor, 1)
    agg = dag.new_vertex("agg", Processor, 2)
    dag.edge(Edge.between(src, agg).partitioned(lambda x: x).distributed())
    owners = [p % 2 for p in range(271)]
    entries = [("agg", k, k * 10) for k in range(100)] + [("agg", BroadcastKey("wm"), 5), ("gone", 1, 1)]
    from jet.core.partitioner import murmur_partition
    from jet.execution.plan import owned_partition_table
    seen = {}
    for member in (0, 1):
        routed = route_restore_entries(entries, dag, {"src": 1, "agg": 2}, MemberTopology(member, 2, owners))
        owned = owned_partition_table(owners, member, 2)
        for (vertex, index), items in routed.items():
            for key, value in items:
                if isinstance(key, BroadcastKey):
                    seen.setdefault("broadcast", []).append((member, index))
                    continue
                assert owners[murmur_partition(key)] == member and owned[murmur_partition(key)] == index
                seen.setdefault(key, []).append(member)
    assert all(len(seen[k]) == 1 for k in range(100)), "each key restored exactly once in the cluster"
    assert sorted(seen["broadcast"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]


class ParitySource(CountingSource):
    """Emits the numbers of parity ``parity`` (one processor)."""

    def __init__(self, gate: Gate, parity: int) -> None:
        super().__init__(gate)
        self.parity = parity

    def init(self, outbox, context):
        super().init(outbox, context)
        self.next = {part: part for part in range(PARTS) if part % 2 == self.parity}


class SlowForward(Processor):
    """Forwards about 8k items/s, so the barriers of its input reach the next vertex late."""

    is_cooperative = False

    def process(self, ordinal, inbox) -> None:
        for _ in range(8):
            if not inbox or not self.outbox.offer(inbox.peek()):
                return
            inbox.remove()
        time.sleep(0.001)


def _feed(gate: Gate, per_step: int, stop: threading.Event) -> threading.Thread:
    """Raise the gate by ``per_step`` every 5 ms: the sources emit steadily, never all at once."""
    def run():
        while not stop.is_set() and gate.allowed < gate.limit:
            gate.allowed += per_step
            time.sleep(0.005)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def two_path_dag(gate: Gate, committed: dict) -> DAG:
    """a -> count directly, b -> slow -> count: b's barriers arrive at count well after a's."""
    dag = DAG()
    a = dag.new_vertex("a", lambda: ParitySource(gate, 0), 1)
    b = dag.new_vertex("b", lambda: ParitySource(gate, 1), 1)
    slow = dag.new_vertex("slow", SlowForward, 1)
    count = dag.new_vertex("count", RunningCount, 2)
    sink = dag.new_vertex("sink", lambda: TwoPhaseListSink(committed), 1)
    dag.edge(Edge.between(a, count).partitioned(lambda x: x % KEYS).distributed())
    dag.edge(Edge.between(b, slow).set_config(EdgeConfig(queue_size=64)))
    dag.edge(Edge.from_(slow).to(count, 1).partitioned(lambda x: x % KEYS).distributed())
    dag.edge(Edge.between(count, sink))
    return dag


@pytest.mark.parametrize("guarantee", [ProcessingGuarantee.EXACTLY_ONCE, ProcessingGuarantee.AT_LEAST_ONCE])
def test_items_after_a_barrier_wait_for_the_slow_input_only_under_exactly_once(guarantee):
    limit = 30_000
    service = TaskletExecutionService(1)
    stop = threading.Event()
    try:
        gate, committed = Gate(limit), {}
        _feed(gate, 200, stop)
        context, future = _start(two_path_dag(gate, committed), guarantee, service)
        _wait_for(lambda: gate.emitted >= 4000, "4000 numbers")
        chunks = Chunks()
        _snapshot(context, chunks, 0)
        emitted = gate.emitted
        _wait_for(lambda: gate.emitted >= emitted + 4000, "4000 more numbers")
        future.cancel("simulated crash")
        assert future.wait(10)
        stop.set()
        gate2 = Gate(limit)
        gate2.allowed = limit
        _, future2 = _start(two_path_dag(gate2, committed), guarantee, service, restore=chunks.entries[0],
                            first_snapshot_id=1)
        future2.result(60)
        if guarantee is ProcessingGuarantee.EXACTLY_ONCE:
            _check_exactly_once(committed, limit)
        else:
            numbers = {x for items in committed.values() for _, x, _ in items}
            assert numbers == set(range(limit)), "at-least-once loses nothing"
    finally:
        stop.set()
        service.shutdown()


def test_processors_that_had_finished_start_finished_after_a_restore():
    from jet.core.processors import items_source_p
    limit = 3000
    batch = list(range(limit, limit + 500))
    service = TaskletExecutionService(1)
    stop = threading.Event()
    try:
        gate, committed = Gate(limit), {}
        _feed(gate, 50, stop)

        def dag_of(gate):
            dag = counting_dag(gate, committed)
            side = dag.new_vertex("batch", items_source_p(batch), 2)
            dag.edge(Edge.from_(side).to(dag.get_vertex("count"), 1).partitioned(lambda x: x % KEYS).distributed())
            return dag

        context, future = _start(dag_of(gate), ProcessingGuarantee.EXACTLY_ONCE, service)
        _wait_for(lambda: gate.emitted >= 1000, "1000 numbers")
        chunks = Chunks()
        _snapshot(context, chunks, 0)  # the batch side has long finished
        future.cancel("simulated crash")
        assert future.wait(10)
        stop.set()
        gate2 = Gate(limit)
        gate2.allowed = limit
        _start(dag_of(gate2), ProcessingGuarantee.EXACTLY_ONCE, service, restore=chunks.entries[0],
               first_snapshot_id=1)[1].result(30)
        outputs = [x for items in committed.values() for _, x, _ in items]
        assert sorted(outputs) == list(range(limit + 500)), "the batch side's items once, not again"
    finally:
        stop.set()
        service.shutdown()


@pytest.mark.parametrize("finished,old_total,new_lp,expected", [
    ({0, 1}, 2, 3, {0, 1, 2}),        # every processor had finished: all new ones start finished
    ({1}, 2, 2, {1}),                 # same parallelism: the same global index
    ({1}, 2, 3, set()),               # some had, on another parallelism: they run again
])
def test_finished_markers_decide_which_processors_start_finished(finished, old_total, new_lp, expected):
    from jet.core.snapshot_keys import ProcessorEnded
    from jet.execution.snapshot_context import PROCESSOR_FINISHED
    dag = DAG()
    dag.new_vertex("src", Processor, new_lp)
    entries = [("src", ProcessorEnded(g, old_total), None) for g in finished] + [("src", BroadcastKey("pos"), 1)]
    routed = route_restore_entries(entries, dag, {"src": new_lp}, MemberTopology())
    assert {i for i in range(new_lp) if routed[("src", i)] is PROCESSOR_FINISHED} == expected
    assert all(routed[("src", i)] == [(BroadcastKey("pos"), 1)] for i in range(new_lp) if i not in expected)


def test_a_finished_processor_that_receives_keyed_state_runs_to_emit_it():
    from jet.core.snapshot_keys import ProcessorEnded
    from jet.execution.snapshot_context import PROCESSOR_FINISHED
    dag = DAG()
    src = dag.new_vertex("src", Processor, 1)
    acc = dag.new_vertex("acc", Processor, 2)
    dag.edge(Edge.between(src, acc).partitioned(lambda x: x))  # local: any processor may hold a key
    entries = [("acc", ProcessorEnded(1, 2), None)] + [("acc", k, k) for k in range(50)]
    routed = route_restore_entries(entries, dag, {"src": 1, "acc": 2}, MemberTopology())
    assert routed[("acc", 1)] is not PROCESSOR_FINISHED
    assert sorted(k for i in (0, 1) for k, _ in routed[("acc", i)]) == list(range(50))
