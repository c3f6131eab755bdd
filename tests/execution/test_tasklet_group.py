"""TaskletGroup: several cooperative tasklets a worker calls as one, and how plans deal them."""

import pytest
from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.cluster.edges.sender import SenderTasklet
from jet.core import DAG, Edge
from jet.core.processors import items_source_p, noop_p
from jet.execution.plan import MemberTopology
from jet.execution.service import TaskletExecutionService
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS, WAS_ALREADY_DONE
from jet.execution.tasklet_group import TaskletGroup, grouped


class Countdown:
    """Done after ``calls`` calls; progress on every call but the idle ones."""

    is_cooperative = True

    def __init__(self, name: str, calls: int, idle_every: int = 0, polling: bool = False) -> None:
        self.name, self.left, self.idle_every, self.polling = name, calls, idle_every, polling
        self.calls = self.inits = self.closes = 0

    def init(self):
        self.inits += 1

    def wants_polling(self):
        return self.polling

    def call(self):
        assert self.closes == 0, f"{self.name} called after its close"
        self.calls += 1
        if self.idle_every and self.calls % self.idle_every == 0:
            return NO_PROGRESS
        self.left -= 1
        return DONE if self.left == 0 else MADE_PROGRESS

    def close(self):
        self.closes += 1


class Failing(Countdown):
    def call(self):
        raise ZeroDivisionError("boom")


def test_a_group_calls_each_member_until_it_is_done_and_closes_each_once():
    members = [Countdown("a", 1), Countdown("b", 3), Countdown("c", 2)]
    group = TaskletGroup("g", members)
    group.init()
    states = [group.call() for _ in range(3)]
    assert states == [MADE_PROGRESS, MADE_PROGRESS, DONE]
    assert [m.calls for m in members] == [1, 3, 2] and [m.closes for m in members] == [1, 1, 1]
    assert [m.inits for m in members] == [1, 1, 1]
    assert group.call() == WAS_ALREADY_DONE
    group.close()  # the worker closes a finished tasklet: nothing is closed twice
    assert [m.closes for m in members] == [1, 1, 1]


def test_a_group_makes_progress_when_any_member_does_and_none_when_none_does():
    idle = Countdown("idle", 10, idle_every=1)
    busy = Countdown("busy", 10, idle_every=2)
    group = TaskletGroup("g", [idle, busy])
    assert group.call() == MADE_PROGRESS
    assert group.call() == NO_PROGRESS


def test_a_group_wants_polling_while_a_live_member_does():
    polled, quiet = Countdown("polled", 1, polling=True), Countdown("quiet", 2)
    group = TaskletGroup("g", [polled, quiet])
    assert group.wants_polling()
    group.call()  # polled is done
    assert not group.wants_polling()


def test_a_members_error_fails_the_job_naming_the_member_and_closes_the_rest():
    ok, failing = Countdown("fine", 5), Failing("sender(x->y, to member 3)", 1)
    with TaskletExecutionService(1) as service:
        future = service.submit([TaskletGroup("senders(x->y)", [ok, failing])], "job")
        with pytest.raises(Exception) as raised:
            future.result(timeout=20)
    assert "ZeroDivisionError" in str(raised.value) and "boom" in str(raised.value)
    cause = raised.value.__cause__
    assert isinstance(cause, ZeroDivisionError) and "(in sender(x->y, to member 3))" in cause.__notes__
    assert ok.closes == 1 and failing.closes == 1


def test_a_group_runs_to_completion_on_the_service():
    members = [Countdown(f"t{i}", i + 1, idle_every=3) for i in range(5)]
    with TaskletExecutionService(1) as service:
        service.submit([TaskletGroup("g", members)], "job").result(timeout=20)
    assert [m.left for m in members] == [0] * 5 and [m.closes for m in members] == [1] * 5


def test_a_group_needs_cooperative_members():
    with pytest.raises(ValueError, match="one or more cooperative tasklets"):
        TaskletGroup("g", [])
    blocking = Countdown("blocking", 1)
    blocking.is_cooperative = False
    with pytest.raises(ValueError, match="one or more cooperative tasklets"):
        TaskletGroup("g", [blocking])


@pytest.mark.parametrize("count, groups, sizes", [(7, 1, [7]), (7, 2, [4, 3]), (3, 4, [1, 1, 1]), (1, 1, [1])])
def test_grouped_deals_tasklets_round_robin_and_leaves_a_single_one_alone(count, groups, sizes):
    tasklets = [Countdown(f"t{i}", 1) for i in range(count)]
    dealt = grouped("senders(a->b)", tasklets, groups)
    assert [len(g.tasklets) if isinstance(g, TaskletGroup) else 1 for g in dealt] == sizes
    members = [t for g in dealt for t in (g.tasklets if isinstance(g, TaskletGroup) else [g])]
    assert sorted(members, key=lambda t: t.name) == sorted(tasklets, key=lambda t: t.name)
    for g in dealt:
        if isinstance(g, TaskletGroup):
            assert g.name.startswith("senders(a->b)")


class _Network:
    def send_frame(self, member, frame):
        pass


@pytest.mark.parametrize("threads", [1, 2])
def test_a_plan_runs_an_edges_senders_and_receivers_in_one_group_per_cooperative_thread(threads):
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(10))), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    plan = DistributedExecutionPlan(dag, network=_Network(), execution_id=7, cooperative_threads=threads,
                                    topology=MemberTopology(1, 16, tuple(partition_owners(16))))
    tasklets = plan.build()
    groups = [t for t in tasklets if isinstance(t, TaskletGroup)]
    assert not any(isinstance(t, (SenderTasklet, ReceiverTasklet)) for t in tasklets)
    assert sorted(g.name for g in groups) == sorted(
        [f"receivers(source->sink){'' if threads == 1 else f' ({i} of 2)'}" for i in range(1, threads + 1)]
        + [f"senders(source->sink){'' if threads == 1 else f' ({i} of 2)'}" for i in range(1, threads + 1)])
    grouped_senders = [t for g in groups for t in g.tasklets if isinstance(t, SenderTasklet)]
    grouped_receivers = [t for g in groups for t in g.tasklets if isinstance(t, ReceiverTasklet)]
    assert sorted(map(id, grouped_senders)) == sorted(map(id, plan.senders.values()))
    assert sorted(map(id, grouped_receivers)) == sorted(map(id, plan.receivers.values()))
    assert len(grouped_senders) == len(grouped_receivers) == 15
