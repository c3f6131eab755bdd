"""Snapshots whose barriers cross members in barrier packets, restored on another member count."""

import threading

import pytest
from jet.cluster.edges.chunk_packets import (
    FLAG_BARRIER,
    FLAG_TERMINAL,
    decode_chunk,
    encode_barrier,
    watermark_timestamp,
)
from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners
from jet.cluster.links.packets import PacketFormatError
from jet.execution.plan import MemberTopology
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_restore import route_restore_entries
from jet.job_config import ProcessingGuarantee

from tests.cluster.inprocess import InProcessCluster
from tests.execution.test_snapshot_barriers import Chunks, Gate, _check_exactly_once, _feed, _wait_for, counting_dag


def test_a_barrier_packet_carries_its_snapshot_id_and_whether_it_is_terminal():
    header, entries = decode_chunk(encode_barrier(7, 2, 1, 41, True))
    assert header.flags == FLAG_BARRIER | FLAG_TERMINAL and entries == []
    assert watermark_timestamp(encode_barrier(7, 2, 1, 41, False)) == 41
    with pytest.raises(PacketFormatError):
        decode_chunk(encode_barrier(7, 2, 1, 41, False)[:-2])


class ClusterRun:
    """One execution of a DAG on every member of an in-process cluster, with snapshots."""

    def __init__(self, cluster: InProcessCluster, make_dag, execution_id: int, restore=None,
                 first_snapshot_id: int = 0) -> None:
        members = cluster.member_count
        owners = partition_owners(members)
        self.contexts, self.futures = [], []
        tasklet_sets = []
        for m in range(members):
            context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, first_snapshot_id=first_snapshot_id)
            dag = make_dag()
            topology = MemberTopology(m, members, owners)
            plan = DistributedExecutionPlan(dag, network=cluster.networks[m], execution_id=execution_id,
                                            topology=topology, snapshot_context=context)
            if restore is not None:
                plan.restore_entries = route_restore_entries(restore, dag, plan.local_parallelism, topology)
            tasklet_sets.append(plan.build())
            cluster.networks[m].register(execution_id, plan.receivers, plan.senders,
                                         set(range(members)) - {m}, lambda peer, error: None,
                                         plan.done_relay)
            self.contexts.append(context)
        self.futures = [cluster.services[m].submit(tasklet_sets[m], f"member{m}") for m in range(members)]

    def snapshot(self, chunks: Chunks, snapshot_id: int) -> None:
        phase1 = [c.start_phase1(snapshot_id, False, chunks.writer(snapshot_id)) for c in self.contexts]
        for future in phase1:
            future.result(timeout=30)
        for future in [c.start_phase2(snapshot_id, True) for c in self.contexts]:
            future.result(timeout=30)

    def crash(self) -> None:
        for future in self.futures:
            future.cancel("simulated loss of a member")
        for future in self.futures:
            assert future.wait(10)

    def join(self) -> None:
        for future in self.futures:
            future.result(60)


@pytest.mark.parametrize("members_before,members_after", [(2, 3), (3, 2)])
def test_a_snapshot_taken_on_one_member_count_restores_exactly_on_another(members_before, members_after):
    limit = 20_000
    committed: dict = {}
    before, after = InProcessCluster(members_before), InProcessCluster(members_after)
    stop = threading.Event()
    try:
        gate = Gate(limit)
        _feed(gate, 100, stop)
        run = ClusterRun(before, lambda: counting_dag(gate, committed), 1)
        chunks = Chunks()
        _wait_for(lambda: gate.emitted >= 3000, "3000 numbers")
        run.snapshot(chunks, 0)
        _wait_for(lambda: gate.emitted >= 6000, "6000 numbers")
        run.snapshot(chunks, 1)
        emitted = gate.emitted
        _wait_for(lambda: gate.emitted >= emitted + 2000, "2000 more numbers")
        run.crash()
        stop.set()
        gate2 = Gate(limit)
        gate2.allowed = limit
        ClusterRun(after, lambda: counting_dag(gate2, committed), 2, restore=chunks.entries[1],
                   first_snapshot_id=2).join()
        _check_exactly_once(committed, limit)
    finally:
        stop.set()
        before.close()
        after.close()
