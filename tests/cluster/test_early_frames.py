"""A member starts its part of an execution within its own ``init``, so a peer's frames may come
before this member has registered the execution: they are held, then handed over in order."""

from collections import defaultdict

import pytest
from jet.cluster.edges import early_frames
from jet.cluster.edges.chunk_packets import decode_chunk, encode_chunk
from jet.cluster.edges.done_relay import DoneRelay, encode_relay_frame
from jet.cluster.edges.early_frames import EarlyFrames
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.links.packets import FrameType

from tests.cluster.inprocess import InProcessCluster
from tests.cluster.test_done_relay import broadcast_to_recorders


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_held_frames_come_back_in_order_and_expire_and_an_ended_execution_holds_none():
    clock = Clock()
    held = EarlyFrames(clock)
    assert held.hold(7, 1, b"a") and held.hold(7, 2, b"bb") and held.hold(8, 1, b"c")
    assert (held.held_frames, held.held_bytes) == (3, 4)
    assert held.take(7) == [(1, b"a"), (2, b"bb")]
    assert held.take(7) == []
    held.ended(9)
    assert not held.hold(9, 1, b"late"), "an execution that ended here holds nothing"
    clock.now += early_frames.HOLD_S + 1
    held.expire()
    assert (held.held_frames, held.held_bytes, held.dropped) == (0, 0, 1)


def test_frames_beyond_the_bound_are_dropped_with_a_warning(monkeypatch, caplog):
    monkeypatch.setattr(early_frames, "MAX_HELD_BYTES", 10)
    held = EarlyFrames()
    assert held.hold(1, 0, b"x" * 8)
    assert not held.hold(1, 0, b"x" * 8)
    assert held.dropped == 1 and held.held_frames == 1
    assert "dropped a frame from member 0 for execution 1, not initialised here" in caplog.text


class Receiver:
    def __init__(self):
        self.frames = []

    def enqueue(self, frame):
        self.frames.append(frame)


class Relay:
    def __init__(self):
        self.frames = []

    def on_frame(self, peer, kind, edge, counts):
        self.frames.append((peer, kind, edge, counts))


def test_a_network_hands_over_what_came_before_registration_first_then_routes_directly():
    network = MemberNetwork(1, lambda peer, frame: None)
    for entry in ("a", "b"):
        network.on_frame(0, encode_chunk(execution_id=5, dest_vertex_id=2, dest_ordinal=0, entries=[entry]))
    network.on_frame(0, encode_relay_frame(FrameType.DONE_NOTICE, 5, (2, 0), {0: 3}))
    assert network.held_frames == 3 and network.dropped_frames == 0
    receiver, relay = Receiver(), Relay()
    network.register(5, {(5, 2, 0, 0): receiver}, {}, {0}, lambda peer, error: None, relay)
    network.on_frame(0, encode_chunk(execution_id=5, dest_vertex_id=2, dest_ordinal=0, entries=["c"]))
    assert [decode_chunk(frame)[1] for frame in receiver.frames] == [["a"], ["b"], ["c"]]
    assert relay.frames == [(0, FrameType.DONE_NOTICE, (2, 0), {0: 3})]
    assert network.held_frames == 0
    network.unregister(5)
    network.on_frame(0, encode_chunk(execution_id=5, dest_vertex_id=2, dest_ordinal=0, entries=["late"]))
    assert network.held_frames == 0 and network.dropped_frames == 1, "a late frame of an ended execution"
    network.on_frame(0, encode_chunk(execution_id=6, dest_vertex_id=2, dest_ordinal=0, entries=["x"]))
    network.discard(6)  # its init failed here
    assert network.held_frames == 0 and network.dropped_frames == 2


@pytest.mark.parametrize("late_member", [0, 2])  # the relay member, and another
def test_a_member_that_registers_after_its_peers_ran_gets_every_item_once(late_member):
    items = list(range(200))
    cluster = InProcessCluster(3)
    record = defaultdict(list)
    try:
        cluster.run(broadcast_to_recorders(items, record), timeout=30, late_member=late_member)
    finally:
        cluster.close()
    for member in range(3):
        assert sorted(record[member]) == items, member
    assert all(network.held_frames == 0 for network in cluster.networks)


def test_a_malformed_frame_held_for_an_execution_is_dropped_at_registration_with_a_warning(caplog):
    network = MemberNetwork(1, lambda peer, frame: None)
    network.on_frame(0, encode_relay_frame(FrameType.DONE_REPORT, 5, (2, 0), {0: 3}))  # member 1 relays nothing
    network.on_frame(0, encode_chunk(execution_id=5, dest_vertex_id=2, dest_ordinal=0, entries=["a"]))
    receiver, relay = Receiver(), DoneRelay(5, me=1, members=[0, 1], send_frame=lambda peer, frame: None,
                                             receivers={}, senders_per_edge={})
    network.register(5, {(5, 2, 0, 0): receiver}, {}, {0}, lambda peer, error: None, relay)
    assert len(receiver.frames) == 1 and network.dropped_frames == 1
    assert "dropped a frame member 0 sent before execution 5 registered here" in caplog.text
    assert "sent a DONE_REPORT to member 1, which does not relay execution 5" in caplog.text
