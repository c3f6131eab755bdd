"""A distributed edge's DONE that no frame can carry goes through the relay member: each member
sends one report and gets at most one notice per edge, and no stream carries a DONE alone."""

from collections import Counter, defaultdict

import pytest
from jet.cluster.edges.chunk_packets import FLAG_DONE, decode_chunk, encode_chunk
from jet.cluster.edges.done_relay import IN_BAND, decode_relay_frame, encode_relay_frame
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.cluster.links.packets import FrameType, PacketFormatError, frame_type
from jet.core import DAG, Edge, Processor
from jet.core.processors import items_source_p
from jet.execution.outbound import SingleTargetCollector
from jet.execution.queues import DONE_ITEM, SpscQueue
from jet.execution.tasklet import DONE

from tests.cluster.inprocess import InProcessCluster


class Recorder(Processor):
    def __init__(self, record):
        self._record = record

    def process(self, ordinal, inbox):
        self._record[self.context.member_index].extend(inbox.take_chunk())


def broadcast_to_recorders(items, record):
    """A DAG maker: ``items`` split over the members' sources, broadcast over a distributed edge
    to a :class:`Recorder` on each member."""
    def make_dag():
        dag = DAG()
        source = dag.new_vertex("source", items_source_p(items), 1)
        sink = dag.new_vertex("sink", lambda: Recorder(record), 1)
        dag.edge(Edge.between(source, sink).distributed().broadcast())
        return dag
    return make_dag


def test_a_relay_frame_decodes_to_what_was_encoded_and_a_bad_one_is_refused():
    frame = encode_relay_frame(FrameType.DONE_NOTICE, 2**62, (3, 1), {0: 5, 7: 0})
    assert decode_relay_frame(frame) == (FrameType.DONE_NOTICE, 2**62, (3, 1), {0: 5, 7: 0})
    report = encode_relay_frame(FrameType.DONE_REPORT, 9, (1, 0), {1: IN_BAND})
    assert decode_relay_frame(report)[3] == {1: IN_BAND}
    with pytest.raises(PacketFormatError, match="claims 2 entries"):
        decode_relay_frame(frame[:-3])
    with pytest.raises(PacketFormatError, match="truncated DONE_NOTICE"):
        decode_relay_frame(frame[:5])
    with pytest.raises(PacketFormatError, match="got CHUNK"):
        decode_relay_frame(encode_chunk(1, 0, 0, []))


@pytest.mark.parametrize("members", [2, 4])
def test_a_short_job_on_many_members_sends_no_done_alone_and_delivers_every_item(members):
    items = list(range(3))  # fewer items than members: most streams carry no item at all
    cluster = InProcessCluster(members)
    wire = []
    for network in cluster.networks:  # count what crosses between members
        def counting(peer, frame, send=network._send_frame, me=network.member_index):
            wire.append((me, peer, frame))
            send(peer, frame)
        network._send_frame = counting
    record = defaultdict(list)
    try:
        cluster.run(broadcast_to_recorders(items, record))
    finally:
        cluster.close()
    for member in range(members):  # broadcast: every member gets every item once
        assert sorted(record[member]) == items, member
    kinds = Counter(frame_type(frame) for _, _, frame in wire)
    chunks = [decode_chunk(frame)[0] for _, _, frame in wire if frame_type(frame) is FrameType.CHUNK]
    assert not [h for h in chunks if h.count == 0 and h.flags & FLAG_DONE], "a DONE travelled alone"
    assert kinds[FrameType.DONE_REPORT] == members - 1, kinds  # every member but the relay, once
    assert all(peer == 0 for me, peer, frame in wire if frame_type(frame) is FrameType.DONE_REPORT)
    assert kinds[FrameType.DONE_NOTICE] <= members - 1, kinds


def test_a_notice_that_overtakes_the_senders_frames_waits_for_them():
    queue = SpscQueue(1024, "to-sink")
    receiver = ReceiverTasklet("receiver", SingleTargetCollector([queue], 0), ReceiveWindow())
    receiver.relay_done(2)  # the relay's notice came first: two frames are still on their way
    for _ in range(3):
        assert receiver.call() != DONE
    receiver.enqueue(encode_chunk(1, 0, 0, ["a"]))
    for _ in range(3):
        assert receiver.call() != DONE
    receiver.enqueue(encode_chunk(1, 0, 0, ["b", "c"]))
    results = [receiver.call() for _ in range(3)]
    assert DONE in results
    taken = []
    while (item := queue.poll()) is not None:
        taken.extend(item) if isinstance(item, list) else taken.append(item)
    assert taken == ["a", "b", "c", DONE_ITEM]


class NoticeTaker:
    def __init__(self):
        self.frames = None

    def relay_done(self, frames):
        self.frames = frames


def test_the_relay_member_sends_each_member_its_notice_once_all_reported_and_only_then_may_end():
    from jet.cluster.edges.done_relay import DoneRelay, RelayCompletionTasklet

    sent = []
    edge = (1, 0)
    mine = {(1, 0, 4): NoticeTaker(), (1, 0, 7): NoticeTaker()}
    relay = DoneRelay(5, me=2, members=[2, 4, 7], send_frame=lambda peer, frame: sent.append((peer, frame)),
                      receivers=mine, senders_per_edge={edge: 2})
    completion = RelayCompletionTasklet(relay)
    relay.sender_finished(edge, 4, IN_BAND)
    relay.sender_finished(edge, 7, 3)  # this member's report, kept here: it is the relay member
    relay.on_frame(4, FrameType.DONE_REPORT, edge, {2: 0, 7: IN_BAND})
    assert completion.call() != DONE and not sent, "member 7 has not reported"
    relay.on_frame(7, FrameType.DONE_REPORT, edge, {2: IN_BAND, 4: 6})
    assert completion.call() == DONE
    notices = {peer: decode_relay_frame(frame) for peer, frame in sent}
    assert notices == {4: (FrameType.DONE_NOTICE, 5, edge, {7: 6}), 7: (FrameType.DONE_NOTICE, 5, edge, {2: 3})}
    assert mine[(1, 0, 4)].frames == 0 and mine[(1, 0, 7)].frames is None  # 7's DONE came in band


def test_a_report_to_a_member_that_does_not_relay_is_refused():
    from jet.cluster.edges.done_relay import DoneRelay

    relay = DoneRelay(5, me=4, members=[2, 4], send_frame=lambda peer, frame: None, receivers={},
                      senders_per_edge={(1, 0): 1})
    with pytest.raises(PacketFormatError, match="member 2 sent a DONE_REPORT to member 4"):
        relay.on_frame(2, FrameType.DONE_REPORT, (1, 0), {4: 0})


def test_reports_that_wait_for_others_are_forwarded_at_the_next_flush():
    """A stream's DONE must not wait for the whole edge: a streaming member with nothing to read
    finishes while the others run on, and its stream must leave watermark coalescing."""
    from jet.cluster.edges.done_relay import DoneRelay, RelayCompletionTasklet

    sent = []
    edge = (1, 0)
    from_1, from_2 = NoticeTaker(), NoticeTaker()
    relay = DoneRelay(5, me=0, members=[0, 1, 2], send_frame=lambda peer, frame: sent.append((peer, frame)),
                      receivers={(1, 0, 1): from_1, (1, 0, 2): from_2}, senders_per_edge={edge: 2})
    completion = RelayCompletionTasklet(relay)
    relay.on_frame(1, FrameType.DONE_REPORT, edge, {0: 0, 2: 0})
    assert not sent
    relay.flush_pending()
    assert sorted((peer, decode_relay_frame(frame)[3]) for peer, frame in sent) == [(2, {1: 0})]
    assert from_1.frames == 0, "member 0's own receiver from member 1 is done"
    assert completion.call() != DONE, "members 0 and 2 have not reported"
    sent.clear()
    relay.flush_pending()
    assert not sent, "nothing is forwarded twice"
    relay.sender_finished(edge, 1, 4)
    relay.sender_finished(edge, 2, IN_BAND)
    relay.on_frame(2, FrameType.DONE_REPORT, edge, {0: 2, 1: 7})
    assert sorted((peer, decode_relay_frame(frame)[3]) for peer, frame in sent) == [(1, {0: 4, 2: 7})]
    assert from_2.frames == 2 and completion.call() == DONE
