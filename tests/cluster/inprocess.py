"""Several members in this process, joined by their real MemberNetworks (frames are encoded,
passed and decoded exactly as over gRPC, minus the socket)."""

from __future__ import annotations

import time

from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners
from jet.cluster.edges.network import MemberNetwork
from jet.core import DAG, Edge, EdgeConfig, Processor
from jet.execution.plan import MemberTopology
from jet.execution.service import TaskletExecutionService


class InProcessCluster:
    def __init__(self, member_count: int, flow_control_period_ms: int = 100) -> None:
        self.member_count = member_count
        self.period_ms = flow_control_period_ms
        self.networks = [MemberNetwork(m, self._sender(m), flow_control_period_ms).start()
                         for m in range(member_count)]
        self.services = [TaskletExecutionService(1) for _ in range(member_count)]
        self.plans: list[DistributedExecutionPlan] = []
        self._next_execution = 1

    def _sender(self, me: int):
        return lambda peer, frame: self.networks[peer].on_frame(me, frame)

    def run(self, make_dag, timeout: float = 30, edge_defaults: EdgeConfig | None = None,
            on_built=None, late_member: int | None = None) -> None:
        """Build ``make_dag()`` on every member, start all, wait for all.

        ``on_built(plans)`` runs after every plan is built and before anything starts. A
        ``late_member`` is built, registered and started only once the others run and its
        network holds a frame of theirs (an ``init`` slower than its peers')."""
        execution_id = self._next_execution
        self._next_execution += 1
        owners = partition_owners(self.member_count)
        self.plans = [None] * self.member_count
        futures = [None] * self.member_count

        def build_and_register(m: int) -> None:
            plan = DistributedExecutionPlan(
                make_dag(), network=self.networks[m], execution_id=execution_id,
                topology=MemberTopology(m, self.member_count, owners),
                edge_defaults=edge_defaults, flow_control_period_ms=self.period_ms)
            tasklets = plan.build()
            self.networks[m].register(execution_id, plan.receivers, plan.senders,
                                      set(range(self.member_count)) - {m}, lambda peer, error: None,
                                      plan.done_relay)
            self.plans[m] = plan
            return tasklets

        on_time = [m for m in range(self.member_count) if m != late_member]
        tasklet_sets = {m: build_and_register(m) for m in on_time}
        if on_built is not None:
            on_built(self.plans)

        def fail_everywhere(done) -> None:  # as the coordinator does: first failure wins
            if done.failure is not None:
                for future in futures:
                    if future is not None:
                        future.fail(done.failure)

        def submit(m: int, tasklets) -> None:
            futures[m] = self.services[m].submit(tasklets, f"member{m}")
            futures[m].add_done_callback(fail_everywhere)

        for m in on_time:
            submit(m, tasklet_sets[m])
        if late_member is not None:
            deadline = time.monotonic() + timeout
            while not self.networks[late_member].held_frames:
                assert time.monotonic() < deadline, f"no frame came for late member {late_member}"
                time.sleep(0.005)
            submit(late_member, build_and_register(late_member))
        for future in futures:
            future.result(timeout)

    def results(self) -> dict[str, list]:
        """The last job's named results, gathered from every member."""
        results: dict[str, list] = {}
        for plan in self.plans:
            for name, items in plan.results.items():
                results.setdefault(name, []).extend(items)
        return results

    def close(self) -> None:
        for network in self.networks:
            network.stop()
        for service in self.services:
            service.shutdown()


def run_over_one_distributed_edge(cluster: InProcessCluster, source_supplier, sink_supplier,
                                  probe: dict, timeout: float) -> None:
    """Run source -> sink over one distributed edge. Before anything runs, ``probe`` gets
    "receiver" (member 1's receiver from member 0) and "sender" (member 0's sender to member 1),
    so the processors can watch them."""
    def make_dag() -> DAG:
        dag = DAG()
        source = dag.new_vertex("source", source_supplier, 1)
        sink = dag.new_vertex("sink", sink_supplier, 1)
        dag.edge(Edge.between(source, sink).distributed())
        return dag

    def remember(plans) -> None:
        (probe["receiver"],) = plans[1].receivers.values()
        (probe["sender"],) = plans[0].senders.values()

    cluster.run(make_dag, timeout=timeout, on_built=remember)


class SlowSink(Processor):
    """A blocking consumer of about 100k items/s. On member 1 it samples, on every call,
    ``(receiver buffered bytes, window units, acked bytes, sender's limit units)`` into
    ``probe["samples"]`` (``probe`` filled by :func:`run_over_one_distributed_edge`); every
    item it takes goes to ``probe["received"]``."""

    is_cooperative = False

    def __init__(self, probe: dict) -> None:
        self._probe = probe

    def process(self, ordinal, inbox) -> None:
        probe = self._probe
        if self.context.member_index == 1:
            receiver, sender = probe["receiver"], probe["sender"]
            probe["samples"].append((receiver.buffered_bytes, receiver.window.window_compressed,
                                     receiver.window.acked_seq_bytes, sender.send_limit.limit_compressed))
        probe["received"].extend(inbox.take_chunk(100))
        time.sleep(0.001)
