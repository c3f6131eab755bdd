"""Flow-control acks go only where a sender can use them: an unchanged limit is not sent again,
a sender not heard from yet or already DONE gets none, so idle and short jobs' streams stay quiet."""

import threading

from jet.cluster.edges.chunk_packets import encode_chunk
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.network import ACK_REFRESH_ROUNDS, ACK_ROUNDS_ALWAYS, MemberNetwork
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.cluster.links.packets import decode_ack_packet
from jet.execution.outbound import SingleTargetCollector
from jet.execution.queues import DONE_ITEM, SpscQueue
from jet.execution.tasklet import DONE


class FakeReceiver:
    """A receiver whose sender has sent something and is not done."""

    bytes_received = 100
    sender_done = False

    def __init__(self) -> None:
        self.window = ReceiveWindow()

    def is_buffer_empty(self) -> bool:
        return True


def network_with(receivers):
    sent = []
    clock = iter(range(0, 10**15, 100_000_000))
    network = MemberNetwork(0, lambda peer, frame: sent.append((peer, decode_ack_packet(frame))),
                            clock_ns=lambda: next(clock))
    network.register(7, receivers, {}, {1, 2}, lambda peer, error: None)
    return network, sent


def test_an_idle_receiver_is_acked_in_its_first_rounds_then_only_on_refresh():
    network, sent = network_with({(7, 3, 0, 1): FakeReceiver(), (7, 3, 0, 2): FakeReceiver()})
    for _ in range(ACK_ROUNDS_ALWAYS):
        network.send_acks()
    assert len(sent) == 2 * ACK_ROUNDS_ALWAYS  # one frame per peer per round at first
    sent.clear()
    rounds = 3 * ACK_REFRESH_ROUNDS
    for _ in range(rounds):
        network.send_acks()
    refreshes = (ACK_ROUNDS_ALWAYS + rounds) // ACK_REFRESH_ROUNDS - ACK_ROUNDS_ALWAYS // ACK_REFRESH_ROUNDS
    assert len(sent) == 2 * refreshes  # idle: only the periodic refreshes
    assert {peer for peer, _ in sent} == {1, 2}


def test_a_changed_limit_is_acked_at_once_and_only_to_its_sender():
    busy, idle = FakeReceiver(), FakeReceiver()
    network, sent = network_with({(7, 3, 0, 1): busy, (7, 3, 1, 2): idle})
    for _ in range(ACK_ROUNDS_ALWAYS + 1):
        network.send_acks()
    sent.clear()
    busy.window.on_item_acked(1 << 20)  # 1 MiB handed downstream: the limit moves
    network.send_acks()
    assert len(sent) == 1
    peer, acks = sent[0]
    assert peer == 1 and [(e.dest_vertex_id, e.dest_ordinal) for e in acks[7]] == [(3, 0)]
    assert acks[7][0].send_seq_limit_compressed >= 16  # 1 MiB is 16 units of 64 KiB


def test_a_new_execution_is_acked_in_its_first_rounds():
    network, sent = network_with({})
    for _ in range(ACK_ROUNDS_ALWAYS + 3):
        network.send_acks()
    assert sent == []
    network.register(8, {(8, 1, 0, 2): FakeReceiver()}, {}, {2}, lambda peer, error: None)
    network.send_acks()
    assert [(peer, list(acks)) for peer, acks in sent] == [(2, [8])]


def test_a_sender_is_acked_from_its_first_frame_until_its_done():
    queue = SpscQueue(1024, "to-sink")
    receiver = ReceiverTasklet("receiver", SingleTargetCollector([queue], 0), ReceiveWindow())
    network, sent = network_with({(7, 3, 0, 1): receiver})
    for _ in range(3):
        network.send_acks()
    assert sent == []  # nothing from the sender yet: it may send 64 KiB unacked
    receiver.enqueue(encode_chunk(7, 3, 0, ["a", "b"]))
    network.send_acks()
    assert [(peer, [(e.dest_vertex_id, e.dest_ordinal) for e in acks[7]]) for peer, acks in sent] == [(1, [(3, 0)])]
    assert receiver.call() != DONE and queue.poll() == ["a", "b"]
    receiver.enqueue(encode_chunk(7, 3, 0, [], done=True))
    assert receiver.call() == DONE and queue.poll() is DONE_ITEM
    sent.clear()
    for _ in range(2 * ACK_REFRESH_ROUNDS):
        network.send_acks()
    assert sent == []  # DONE arrived: the sender sends nothing more, refreshes included


def test_the_flow_control_timer_sleeps_while_no_execution_is_registered_here():
    network = MemberNetwork(0, lambda peer, frame: None, flow_control_period_ms=5)
    rounds = []
    original = network.send_acks
    network.send_acks = lambda: (rounds.append(1), original())
    network.start()
    try:
        threading.Event().wait(0.3)
        assert rounds == [], "an idle member's timer ran rounds"
        network.register(7, {(7, 1, 0, 1): FakeReceiver()}, {}, {1}, lambda peer, error: None)
        deadline = threading.Event()
        for _ in range(200):
            if len(rounds) >= 3:
                break
            deadline.wait(0.01)
        assert len(rounds) >= 3, "a registered execution's receivers get their rounds"
        network.unregister(7)
        deadline.wait(0.05)
        settled = len(rounds)
        deadline.wait(0.3)
        assert len(rounds) <= settled + 1, "the timer sleeps again once the execution is gone"
    finally:
        network.stop()
    assert network.wait_stopped(1)
