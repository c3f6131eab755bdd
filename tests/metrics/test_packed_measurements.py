"""Measurements travel packed (each tag set once) and unpack to exactly what was packed."""

import json

import pytest

from jet.cluster import messages
from jet.cluster.job_execution import ExecutionOutcome, decode_report, encode_report
from jet.cluster.packets import PacketFormatError
from jet.execution.measurements import pack_measurements, packed_measurements_json, unpack_measurements


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
    header, blob = encode_report(outcome, results, {"map": {"receivedCount": 7}}, original)
    header, blob = messages.decode_message(messages.encode_message(header, blob))  # as it crosses the wire
    assert "measurements" not in header  # the header (JSON, decoded at once) stays small whatever k is
    got_outcome, got_results, metrics, measurements = decode_report(header, blob)
    assert (got_outcome, got_results, metrics) == (outcome, results, {"map": {"receivedCount": 7}})
    assert measurements == packed_measurements_json(original) and isinstance(measurements, bytes)
    assert unpack_measurements(measurements) == original


def test_an_end_report_without_results_or_measurements_decodes_to_empty_ones():
    header, blob = encode_report(ExecutionOutcome("j1", 42, 3, ok=False, error="E: x"), {}, {})
    outcome, results, metrics, measurements = decode_report(header, blob)
    assert not outcome.ok and results == {} and metrics == {} and unpack_measurements(measurements) == []


@pytest.mark.parametrize("length", [-1, 10_000, "12", 1.5])
def test_an_end_report_whose_measurements_length_does_not_fit_is_refused(length):
    header, blob = encode_report(ExecutionOutcome("j1", 42, 3, ok=True), {"default": [1]}, {},
                                 remote_edge_measurements(2))
    with pytest.raises(PacketFormatError, match=f"measurements_bytes must be 0..{len(blob)}.*got {length!r}"):
        decode_report({**header, "measurements_bytes": length}, blob)
