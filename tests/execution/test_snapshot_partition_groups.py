"""A snapshot's keyed chunks are laid out by partition group, and a restore reads only the
chunks of its member's partitions: work proportional to the member's share, on any member count.

Two members' window tasklets save into a real store as members do (the tasklet, its
``SnapshotContext`` and the store's writer); each restore reads through ``chunk_filter``."""

import pytest

from jet.cluster.edges.distributed_plan import partition_owners
from jet.core import DAG, Edge
from jet.core.aggregate import counting
from jet.core.inbox import Inbox
from jet.core.processor import Context
from jet.core.processors.windows import aggregate_to_sliding_window_p
from jet.core.sliding_window_policy import tumbling_win_policy
from jet.execution.plan import MemberTopology
from jet.execution.processor_tasklet import ProcessorTasklet
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_portions import grouping_partition_fn
from jet.execution.snapshot_restore import chunk_filter, route_restore_entries
from jet.job_config import ProcessingGuarantee
from jet.snapshot.store import SnapshotStore, chunk_vertex_and_group
from tests import partition_oracle as oracle
from tests.execution.support import call_until_saved

KEYS_PER_MEMBER = 10_000
JOB = "groups"


def _key(item):
    return item


def _window():
    return aggregate_to_sliding_window_p(_key, tumbling_win_policy(1000), counting())


def _dag() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", _window())
    window = dag.new_vertex("window", _window())
    dag.edge(Edge.between(source, window).partitioned(_key).distributed())
    return dag


def _keys_of(member: int, members: int, count: int) -> list[int]:
    """Keys whose partition ``member`` owns, by the documented rules (``partition_oracle``)."""
    keys, key = [], 0
    while len(keys) < count:
        if oracle.member_of(oracle.partition_of(key), members) == member:
            keys.append(key)
        key += 1
    return keys


def _save(store: SnapshotStore, slot: int, member: int, keys: list[int]) -> int:
    """Member ``member`` of 2 saves a window holding ``keys``; the calls its save took."""
    dag = _dag()
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, name=f"member {member}")
    tasklet = ProcessorTasklet("window#0", _window()(), Context(vertex_name="window", member_index=member,
                                                              member_count=2), [], [], [], context,
                               snapshot_partition=grouping_partition_fn(dag, dag.get_vertex("window")))
    tasklet.init()
    inbox = Inbox()
    inbox.add_chunk([(1, key) for key in keys])
    tasklet.processor.process(0, inbox)
    writer = store.join_snapshot(JOB, 0, slot)

    def write(vertex, sequence, data, group):
        writer.write_chunk_bytes(vertex, member, sequence, data, group)
        return len(data)

    phase1 = context.start_phase1(0, False, write)
    calls = call_until_saved(tasklet)
    phase1.result(timeout=30)
    context.execution_ended(None)
    return calls


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A committed snapshot of two members' windows; (store, keys per member, save calls)."""
    store = SnapshotStore(str(tmp_path_factory.mktemp("store")))
    writer = store.begin_snapshot(JOB, 0)
    keys = [_keys_of(m, 2, KEYS_PER_MEMBER) for m in range(2)]
    calls = [_save(store, writer.slot, m, keys[m]) for m in range(2)]
    writer.commit({"keys": 2 * KEYS_PER_MEMBER + 2})
    return store, keys, calls


def _restore(store: SnapshotStore, member: int, members: int) -> tuple[set, int, int]:
    """(keys restored, chunks read, entries read) of one member of ``members``."""
    dag = _dag()
    topology = MemberTopology(member, members, partition_owners(members))
    wanted_here, read = chunk_filter(dag, topology), {"chunks": 0, "entries": 0}

    def wanted(vertex, group):
        chosen = wanted_here(vertex, group)
        read["chunks"] += chosen
        return chosen

    def counted(entries):
        for entry in entries:
            read["entries"] += 1
            yield entry

    routed = route_restore_entries(counted(store.read_snapshot(JOB, wanted=wanted)), dag,
                                   {"source": 1, "window": 1}, topology)
    keys = {key for key, _ in routed[("window", 0)] if type(key) is int}
    return keys, read["chunks"], read["entries"]


def test_a_large_save_takes_several_calls_and_goes_into_chunks_per_partition_group(snapshot):
    store, _, calls = snapshot
    assert min(calls) > 3
    info = store.last_good(JOB)
    groups = {chunk_vertex_and_group(chunk) for chunk in info.chunks}
    assert {group for _, group in groups} == set(range(60)) | {None}


def test_each_of_two_members_reads_only_its_share(snapshot):
    store, keys, _ = snapshot
    chunks = len(store.last_good(JOB).chunks)
    for member in range(2):
        restored, chunks_read, entries_read = _restore(store, member, 2)
        assert restored == set(keys[member])
        # its own keys, plus the two processors' progress entries every member reads
        assert entries_read == KEYS_PER_MEMBER + 2
        # each member saved its keys into the 30 groups it owns and its progress into one chunk
        # every member reads: a member reads half of the groups and both group-less chunks
        assert (chunks, chunks_read) == (2 * 31, 30 + 2)


@pytest.mark.parametrize("members", [1, 3, 4, 7])
def test_a_restore_on_another_member_count_restores_every_key_once(snapshot, members):
    store, keys, _ = snapshot
    restored = [_restore(store, member, members) for member in range(members)]
    every = [key for member_keys, _, _ in restored for key in member_keys]
    assert sorted(every) == sorted(keys[0] + keys[1])
    total_read = sum(entries for _, _, entries in restored)
    if 60 % members == 0:  # every member reads exactly its share (and every progress entry)
        assert total_read == 2 * KEYS_PER_MEMBER + 2 * members
    else:  # groups straddle members: more is read, and skipped when routed
        assert total_read > 2 * KEYS_PER_MEMBER + 2 * members
