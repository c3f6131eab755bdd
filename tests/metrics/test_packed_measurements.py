"""Measurements travel packed (each tag set once) and unpack to exactly what was packed."""

import json

from jet.execution.measurements import pack_measurements, unpack_measurements


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
