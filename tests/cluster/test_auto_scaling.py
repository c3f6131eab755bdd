"""A job with ``auto_scaling`` goes on with the members it has and scales back up (Jet's
``autoScaling``, ``scaleUpDelayMillis``).

The plan of an execution on a part of the cluster (in-process members, routing checked against
the documented partitioning), the coordinator's course over members played by a function, and
the whole story on real member processes: a 3-member snapshot restored on 2 members, then on 3
again, with exact results (the oracle is plain Python)."""

import threading
import time

import cloudpickle
import jet
import pytest
from jet.cluster.coordination.job_state import JobStatus
from jet.cluster.coordination.scale_up import ScaleUpTimer
from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.executions.job_execution import JobExecution, PlanMessage
from jet.cluster.settings import MemberSettings, SettingsError
from jet.connectors.observable import ObservableSinkSupplier
from jet.core import DAG, Edge
from jet.core.functions import whole_item
from jet.core.processors import items_source_p
from jet.execution.service import TaskletExecutionService
from jet.snapshot import SnapshotStore

from tests import partition_oracle as oracle
from tests.cluster.cluster_support import deliveries, json_sink, wait_until
from tests.cluster.fake_members import fake_cluster, small_dag
from tests.cluster.inprocess import InProcessCluster
from tests.cluster.member_loss_support import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TIMEOUT_MS
from tests.cluster.scaling_support import SPLITS, split_ledger_dag

EXACTLY_ONCE = {"name": "scaling", "processing_guarantee": "exactly-once", "snapshot_interval_ms": 30}
QUICK = {"member_rejoin_timeout_ms": 200, "scale_up_delay_ms": 200}


# -- an execution on a part of the cluster ----------------------------------------------------
def test_an_execution_on_members_0_and_2_routes_by_positions_and_sends_by_member_index(tmp_path):
    items, lp, members = list(range(600)), 2, [0, 2]
    cluster = InProcessCluster(3)
    dag_for = lambda: _partitioned_dag(items, tmp_path, lp)  # noqa: E731
    try:
        plans, futures = [], []
        for position, member in enumerate(members):
            message = PlanMessage("job", 7, member, 3, partition_owners(2), members=members)
            plan = DistributedExecutionPlan(dag_for(), network=cluster.networks[member], execution_id=7,
                                            topology=message.topology(), members=message.execution_members)
            tasklets = plan.build()
            cluster.networks[member].register(7, plan.receivers, plan.senders, set(members) - {member},
                                              lambda peer, error: None, plan.done_relay)
            assert {key[3] for key in plan.senders} == set(members) - {member}  # physical indices
            plans.append((member, tasklets))
        futures = [cluster.services[m].submit(tasklets, f"member{m}") for m, tasklets in plans]
        for future in futures:
            future.result(30)
    finally:
        cluster.close()
    expected = {(position, j): [] for position in range(2) for j in range(lp)}
    for item in items:
        expected[oracle.processor_on_distributed_edge(oracle.partition_of(item), 2, lp)].append(item)
    got = deliveries(tmp_path, "sink")  # named by Context.member_index: the position
    assert {p: sorted(v) for p, v in got.items()} == expected
    assert cluster.networks[1].dropped_frames == 0


def _partitioned_dag(items, out_dir, lp) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(items), 1)
    sink = dag.new_vertex("sink", json_sink(out_dir), lp)
    dag.edge(Edge.between(source, sink).distributed().partitioned(whole_item))
    return dag


def test_member_2_as_the_second_of_2_takes_the_second_share_and_publishes_its_observable():
    """Context counts positions (sources split their work by them); the observable sink finds
    the publisher the execution registered."""
    items = list(range(50))
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(items), 1)
    sink = dag.new_vertex("seen", ObservableSinkSupplier("seen", 100), 1)
    dag.edge(Edge.between(source, sink))
    published, outcomes = [], []
    done = threading.Event()
    service = TaskletExecutionService(1)
    message = PlanMessage("job-x", 5, 2, 3, partition_owners(2), members=[0, 2])
    execution = JobExecution(message, cloudpickle.dumps(dag), network=MemberNetwork(2, lambda peer, frame: None),
                             service=service, on_done=lambda outcome, _: (outcomes.append(outcome), done.set()),
                             publish_observable=lambda job, name, capacity, batch: published.extend(batch))
    try:
        execution.start()
        assert done.wait(30)
        assert outcomes[0].ok, outcomes[0].error
        assert sorted(published) == [item for item in items if item % 2 == 1]
    finally:
        execution.cleanup()
        service.shutdown()


@pytest.mark.parametrize("members,member_index,owners,message", [
    ([0, 2], 1, partition_owners(2), "member 1, which is not one of the execution's members"),
    ([2, 0], 0, partition_owners(2), "ascending order"),
    ([0, 3], 0, partition_owners(2), "member indices 0..2"),
    ([0, 2], 0, partition_owners(3), "positions 0..1"),
])
def test_a_plan_message_that_contradicts_itself_is_refused_naming_what(members, member_index, owners, message):
    with pytest.raises(ValueError, match=message):
        PlanMessage("job", 1, member_index, 3, owners, members=members).topology()


def test_a_plan_message_without_members_means_the_whole_cluster():
    message = PlanMessage.from_header(PlanMessage("job", 1, 2, 3, partition_owners(3)).to_header())
    assert message.execution_members == [0, 1, 2]
    assert (message.topology().member_index, message.topology().member_count) == (2, 3)
    on_part = PlanMessage("job", 1, 2, 3, partition_owners(2), members=[0, 2]).topology()
    assert (on_part.member_index, on_part.member_count) == (1, 2)


# -- the coordinator's course ------------------------------------------------------------------
def test_after_the_rejoin_wait_the_job_goes_on_with_the_members_it_has_then_scales_up(tmp_path):
    coordinator, members = fake_cluster(tmp_path, count=3, **QUICK)
    job_id = coordinator.submit(small_dag(), EXACTLY_ONCE)
    wait_until(lambda: coordinator.record(job_id).snapshots.count >= 1, what="a snapshot on 3 members")
    assert members.inits[0]["members"] == [0, 1, 2]
    coordinator.on_member_lost(1, ConnectionError("stream broke"))
    wait_until(lambda: len(members.inits) == 5, what="the execution on the 2 members left")
    record = coordinator.record(job_id)
    restart = members.inits[3:]
    assert [init["member_index"] for init in restart] == [0, 2]
    assert all(init["members"] == [0, 2] and init["partition_owners"] == partition_owners(2) for init in restart)
    assert restart[0]["restore"]["job_id"] == job_id
    assert record.restarts == 1 and "member(s) 1 lost" in record.last_restart_cause
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING on 2")
    assert coordinator.record(job_id).to_header()["members"] == [0, 2]
    coordinator.on_member_lost(1, ConnectionError("lost again"))  # not in the execution: no effect
    assert coordinator.record(job_id).status is JobStatus.RUNNING
    before = set(members.terminal)
    coordinator.on_member_joined(1)
    wait_until(lambda: len(members.inits) == 8, what="the execution on all 3 members again")
    terminal = members.terminal - before
    assert len(terminal) == 1, "scaling up takes a terminal snapshot"
    assert [init["member_index"] for init in members.inits[5:]] == [0, 1, 2]
    assert members.inits[5]["members"] == [0, 1, 2]
    assert members.inits[5]["restore"]["snapshot_id"] == terminal.pop()
    record = coordinator.record(job_id)
    assert record.restarts == 2 and "scaling up from 2 to 3 members" in record.last_restart_cause
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)


def test_a_job_without_a_guarantee_goes_on_from_scratch_and_scales_up_by_a_cancel(tmp_path):
    coordinator, members = fake_cluster(None, count=3, **QUICK)
    job_id = coordinator.submit(small_dag(), {"name": "plain"})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    coordinator.on_member_lost(2, ConnectionError("gone"))
    wait_until(lambda: len(members.inits) == 5, what="the execution on members 0 and 1")
    assert [(i["members"], i["restore"]) for i in members.inits[3:]] == [([0, 1], None)] * 2
    coordinator.on_member_joined(2)
    wait_until(lambda: len(members.inits) == 8, what="the execution on all 3 members again")
    assert [(i["members"], i["restore"]) for i in members.inits[5:]] == [([0, 1, 2], None)] * 3
    assert members.terminal == set()
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)


def test_a_job_without_auto_scaling_always_runs_on_every_member(tmp_path):
    coordinator, members = fake_cluster(tmp_path, count=3, **QUICK)
    job_id = coordinator.submit(small_dag(), {**EXACTLY_ONCE, "auto_scaling": False})
    wait_until(lambda: coordinator.record(job_id).status is JobStatus.RUNNING, what="RUNNING")
    coordinator.on_member_lost(1, ConnectionError("gone"))
    coordinator.on_member_joined(1)
    wait_until(lambda: len(members.inits) == 6, what="the restart once member 1 is back")
    assert all(init["members"] == [0, 1, 2] for init in members.inits)
    coordinator.cancel(job_id)
    coordinator.wait(job_id, 10)


def test_a_later_join_starts_the_scale_up_countdown_again():
    calls: list[float] = []
    called = threading.Event()
    timer = ScaleUpTimer(300, lambda: bool(calls.append(time.monotonic()) or called.set()))
    try:
        timer.member_joined()
        time.sleep(0.15)
        last_join = time.monotonic()
        timer.member_joined()
        assert called.wait(10)
        assert calls[0] >= last_join + 0.3  # never before the delay after the last join
        time.sleep(0.35)
        assert len(calls) == 1
    finally:
        timer.stop()


def test_scale_up_delay_is_a_setting():
    assert MemberSettings.load({}, environ={}).control.scale_up_delay_ms == 10_000
    assert MemberSettings.load({}, environ={"JET_SCALE_UP_DELAY_MS": "500"}).control.scale_up_delay_ms == 500
    with pytest.raises(SettingsError, match="scale_up_delay_ms.*an integer >= 0"):
        MemberSettings.load({}, environ={"JET_SCALE_UP_DELAY_MS": "soon"})


# -- on real member processes ------------------------------------------------------------------
PER_SPLIT = 2400
HOLD = 1600


def committed(cluster, job_id) -> int:
    return SnapshotStore(cluster.snapshot_store).load_job_record(job_id).last_good_snapshot_id


def test_a_job_goes_on_with_2_members_and_scales_back_up_to_3_exactly_once(tmp_path):
    release = tmp_path / "release"
    with jet.local_cluster(members=3, threads=1, log_dir=tmp_path, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                           heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS, restart_delay_ms=100,
                           member_rejoin_timeout_ms=1000, scale_up_delay_ms=1000) as cluster:
        job = cluster.new_job(split_ledger_dag(PER_SPLIT, HOLD, str(release)),
                              {"name": "ledger", "processing_guarantee": "exactly-once", "snapshot_interval_ms": 300})
        wait_until(lambda: committed(cluster, job.id) >= 1, what="snapshots on 3 members")
        assert job.info()["members"] == [0, 1, 2]
        cluster.kill_member(2, restart=False)
        wait_until(lambda: job.info()["restarts"] == 1 and job.info()["status"] == "RUNNING", 30,
                   "the job going on without member 2")
        info = job.info()
        assert info["members"] == [0, 1] and "member(s) 2 lost" in info["lastRestartCause"]
        on_two = committed(cluster, job.id)
        wait_until(lambda: committed(cluster, job.id) > on_two, what="a snapshot on 2 members")
        cluster.restart_member(2)
        wait_until(lambda: job.info()["restarts"] == 2 and job.info()["members"] == [0, 1, 2], 60,
                   "the job scaled up to 3 members")
        assert "scaling up from 2 to 3 members" in job.info()["lastRestartCause"]
        release.touch()
        job.join(timeout=120)
        ledger = dict(job.result())
        assert ledger == {split: list(range(PER_SPLIT)) for split in range(SPLITS)}
        assert "goes on without member(s) [2]" in (tmp_path / "member-0.log").read_text()
        for index in range(3):
            assert " ERROR " not in (tmp_path / f"member-{index}.log").read_text()
