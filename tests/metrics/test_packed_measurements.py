"""Measurements travel packed (each tag set once) and unpack to exactly what was packed."""

import json
import types

import pytest
from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, partition_owners
from jet.cluster.edges.edge_metrics import packed_execution_measurements, plan_figures
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind, decode_report, encode_report
from jet.cluster.links import messages
from jet.cluster.links.packets import PacketFormatError
from jet.core import DAG, Edge
from jet.core.processors import items_source_p, noop_p
from jet.execution.measurements import (
    pack_measurements,
    packed_measurements_json,
    processor_measurements,
    unpack_measurements,
)
from jet.execution.plan import MemberTopology


def remote_edge_measurements(remote_members: int) -> list[dict]:
    base = {"job": "j1", "job_name": "wc", "execution": "42", "member": "0"}
    result = [{"metric": "receivedCount", "value": 7, "tags": {**base, "vertex": "map", "processor": "0"}}]
    for remote in range(1, remote_members + 1):
        tags = {**base, "vertex": "map", "ordinal": "0", "to_vertex": "sink", "remote_member": str(remote)}
        result += [{"metric": name, "value": remote * 10 + i, "tags": dict(tags)}
                   for i, name in enumerate(("distributedBytesOut", "distributedPacketsOut", "distributedItemsOut"))]
    return result


def test_packed_measurements_unpack_to_the_same_list_in_the_same_order():
    original = remote_edge_measurements(15)
    packed = json.loads(json.dumps(pack_measurements(original)))  # as it crosses the wire
    assert unpack_measurements(packed) == original
    assert len(packed["tags"]) == 16 and len(packed["rows"]) == 46


def test_packing_shrinks_a_member_with_many_remote_edges():
    original = remote_edge_measurements(15)
    assert len(json.dumps(pack_measurements(original))) * 2 < len(json.dumps(original))


def test_nothing_packed_unpacks_to_nothing():
    assert unpack_measurements(pack_measurements([])) == []
    assert unpack_measurements({}) == [] and unpack_measurements(None) == []


def test_an_end_report_carries_the_measurements_as_json_bytes_beside_the_results():
    original = remote_edge_measurements(15)
    outcome = ExecutionOutcome("j1", 42, 3, ok=True)
    results = {"default": [("a", 1), ("b", 2)]}
    header, blob = encode_report(outcome, results, {"map": {"receivedCount": 7}}, pack_measurements(original))
    header, blob = messages.decode_message(messages.encode_message(header, blob))  # as it crosses the wire
    assert "measurements" not in header  # the header (JSON, decoded at once) stays small whatever k is
    got_outcome, got_results, metrics, measurements = decode_report(header, blob)
    assert (got_outcome, got_results.load(), metrics) == (outcome, results, {"map": {"receivedCount": 7}})
    assert measurements == packed_measurements_json(pack_measurements(original)) and isinstance(measurements, bytes)
    assert unpack_measurements(measurements) == original


def test_an_end_report_without_results_or_measurements_decodes_to_empty_ones():
    header, blob = encode_report(ExecutionOutcome("j1", 42, 3, ok=False, error="E: x", kind=FailureKind.JOB), {}, {})
    outcome, results, metrics, measurements = decode_report(header, blob)
    assert not outcome.ok and results.load() == {} and metrics == {} and unpack_measurements(measurements) == []


@pytest.mark.parametrize("length", [-1, 10_000, "12", 1.5])
def test_an_end_report_whose_measurements_length_does_not_fit_is_refused(length):
    header, blob = encode_report(ExecutionOutcome("j1", 42, 3, ok=True), {"default": [1]}, {},
                                 pack_measurements(remote_edge_measurements(2)))
    with pytest.raises(PacketFormatError, match=f"measurements_bytes must be 0..{len(blob)}.*got {length!r}"):
        decode_report({**header, "measurements_bytes": length}, blob)


class _Network:
    def send_frame(self, member, frame):
        pass


def member_execution(members: int):
    """Member 1's execution of a source -> distributed edge -> sink DAG on ``members`` members,
    built (not run), with figures set on its senders and receivers."""
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(10))), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    plan = DistributedExecutionPlan(dag, network=_Network(), execution_id=7,
                                    topology=MemberTopology(1, members, tuple(partition_owners(members))))
    plan.tasklets = [t for t in plan.build() if hasattr(t, "context")]
    for (_, _, _, remote), sender in plan.senders.items():
        sender.bytes_sent, sender.packets_sent, sender.items_sent = 100 * remote, remote, 3 * remote
    for (_, _, _, remote), receiver in plan.receivers.items():
        receiver.packets_received, receiver.items_received = 2 * remote, 5 * remote
    return types.SimpleNamespace(job_id="j1", execution_id=7, member_index=1, plan=plan,
                                 message=types.SimpleNamespace(job_name="wc"))


def test_an_executions_packed_measurements_unpack_to_one_measurement_per_edge_figure_and_remote_member():
    execution = member_execution(4)
    base = {"job": "j1", "job_name": "wc", "execution": "7", "member": "1"}
    expected = list(processor_measurements(execution.plan.tasklets, base, 1000))
    for remote in (0, 2, 3):
        tags = {**base, "vertex": "source", "ordinal": "0", "to_vertex": "sink", "remote_member": str(remote)}
        expected += [{"metric": metric, "value": value, "tags": tags} for metric, value in
                     (("distributedBytesOut", 100 * remote), ("distributedPacketsOut", remote),
                      ("distributedItemsOut", 3 * remote))]
    for remote in (0, 2, 3):
        tags = {**base, "vertex": "source", "ordinal": "0", "to_vertex": "sink", "remote_member": str(remote)}
        receiver = execution.plan.receivers[(7, 1, 0, remote)]
        expected += [{"metric": metric, "value": value, "tags": tags} for metric, value in
                     (("distributedBytesIn", 0), ("distributedPacketsIn", 2 * remote),
                      ("distributedItemsIn", 5 * remote), ("receiveWindow", receiver.window.window_compressed))]
    packed = json.loads(packed_measurements_json(packed_execution_measurements(execution, 1000)))
    assert unpack_measurements(packed) == expected


def test_a_remote_member_adds_a_few_numbers_to_the_packed_measurements_not_a_tag_set():
    sizes = [len(packed_measurements_json(packed_execution_measurements(member_execution(k), 1000)))
             for k in (4, 16)]
    assert (sizes[1] - sizes[0]) / 12 < 60  # two short lists of small numbers per remote member


def test_a_members_vertex_figures_add_up_its_senders_and_receivers_over_the_remote_members():
    figures = plan_figures(member_execution(4).plan, 1000)
    remotes = (0, 2, 3)
    assert figures["source"]["distributedBytesOut"] == sum(100 * r for r in remotes)
    assert figures["source"]["distributedItemsOut"] == sum(3 * r for r in remotes)
    assert figures["sink"]["distributedItemsIn"] == sum(5 * r for r in remotes)
    assert figures["sink"]["distributedBytesIn"] == 0
    assert "distributedItemsIn" not in figures["source"] and "distributedItemsOut" not in figures["sink"]
