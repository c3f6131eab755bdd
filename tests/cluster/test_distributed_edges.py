"""Routing across members over distributed edges, with members in this process."""

from collections import Counter, defaultdict

import pytest
from jet.cluster.edges.done_relay import IN_BAND
from jet.core import DAG, HASH_PARTITIONER, Edge, Processor
from jet.core.aggregate import counting
from jet.core.functions import entry_key, whole_item
from jet.core.processors import accumulate_by_key_p, combine_by_key_p, flat_map_p, items_source_p

from tests import partition_oracle as oracle
from tests.cluster.inprocess import InProcessCluster

N = 6000


class Recorder(Processor):
    """Records items under (member index, local index)."""

    def __init__(self, record):
        self._record = record

    def process(self, ordinal, inbox):
        key = (self.context.member_index, self.context.local_index)
        self._record[key].extend(inbox.take_chunk())


@pytest.fixture(params=[2, 3], ids=["2-members", "3-members"])
def cluster(request):
    cluster = InProcessCluster(request.param)
    yield cluster
    cluster.close()


def _deliveries(cluster, route, items=range(N), down=2):
    record = defaultdict(list)

    def make_dag():
        dag = DAG()
        source = dag.new_vertex("source", items_source_p(list(items)), 2)
        sink = dag.new_vertex("sink", lambda: Recorder(record), down)
        dag.edge(route(Edge.between(source, sink)).distributed())
        return dag

    cluster.run(make_dag)
    return record


def test_unicast_delivers_every_item_once_and_every_member_gets_a_share(cluster):
    record = _deliveries(cluster, lambda e: e.unicast(), items=range(200_000))
    assert sorted(x for items in record.values() for x in items) == list(range(200_000))
    members = {member for (member, _), items in record.items() if items}
    assert members == set(range(cluster.member_count))


def test_broadcast_reaches_every_processor_in_the_cluster_once(cluster):
    record = _deliveries(cluster, lambda e: e.broadcast())
    assert len(record) == 2 * cluster.member_count
    for items in record.values():
        assert sorted(items) == list(range(N))


def test_partitioned_lands_on_the_owner_processor(cluster):
    words = [f"w{i}" for i in range(N)]
    record = _deliveries(cluster, lambda e: e.partitioned(whole_item), items=words)
    expected = defaultdict(list)
    for word in words:
        expected[oracle.processor_on_distributed_edge(oracle.partition_of(word), cluster.member_count, 2)].append(word)
    assert {p: sorted(items) for p, items in record.items()} == {p: sorted(items) for p, items in expected.items()}


def test_all_to_one_reaches_one_processor_in_the_whole_cluster(cluster):
    record = _deliveries(cluster, lambda e: e.all_to_one("single"))
    receiving = [key for key, items in record.items() if items]
    assert receiving == [oracle.processor_on_distributed_edge(oracle.partition_of("single"), cluster.member_count, 2)]
    assert sorted(record[receiving[0]]) == list(range(N))


def test_two_stage_word_count_equals_the_plain_result(cluster):
    lines = [f"alpha beta w{i % 50} gamma w{i % 7}" for i in range(20_000)]
    expected = Counter(w for line in lines for w in line.split())
    record = defaultdict(list)

    def make_dag():
        dag = DAG()
        source = dag.new_vertex("lines", items_source_p(lines), 1)
        tokenize = dag.new_vertex("tokenize", flat_map_p(str.split))
        prepare = dag.new_vertex("count-prepare", accumulate_by_key_p(whole_item, counting()))
        combine = dag.new_vertex("count", combine_by_key_p(counting()))
        sink = dag.new_vertex("sink", lambda: Recorder(record), 1)
        dag.edge(Edge.between(source, tokenize))
        dag.edge(Edge.between(tokenize, prepare).partitioned(whole_item, HASH_PARTITIONER))
        dag.edge(Edge.between(prepare, combine).partitioned(entry_key).distributed())
        dag.edge(Edge.between(combine, sink))
        return dag

    cluster.run(make_dag)
    counts = [entry for items in record.values() for entry in items]
    assert len(counts) == len(expected), "each word is counted on exactly one member"
    assert dict(counts) == dict(expected)


def test_packets_hold_at_most_the_size_limit_unless_one_item_is_larger():
    from jet.cluster.edges.chunk_packets import decode_chunk, payload_bytes
    from jet.cluster.edges.sender import SenderTasklet
    from jet.execution.inbound import InboundEdgeStream
    from jet.execution.queues import DONE_ITEM, SpscQueue

    queue = SpscQueue(10_000)
    items = [("x" * (i % 97), i) for i in range(3000)] + ["y" * 5000, "z"]
    queue.offer_chunk(items)
    queue.offer_special(DONE_ITEM)
    frames = []
    sender = SenderTasklet("sender", InboundEdgeStream(0, 0, [queue]), frames.append, 1, 2, 0,
                           packet_size_limit=1024, pairs=False, on_finished=lambda frames: None)
    sender.send_limit.on_ack(10_000)
    while not sender.call() & 2:
        pass
    received = [entry for frame in frames for entry in decode_chunk(frame)[1]]
    assert received == items
    for frame in frames:
        entries = decode_chunk(frame)[1]
        assert payload_bytes(frame) <= 1024 or len(entries) == 1, (payload_bytes(frame), len(entries))
    assert len(frames) > 10


def _drain_sender(queue_items: list, special) -> tuple[list, list]:
    """Frames a sender sends for ``queue_items`` followed by ``special`` items (DONE last), and
    what it told its DONE relay."""
    from jet.cluster.edges.sender import SenderTasklet
    from jet.execution.inbound import InboundEdgeStream
    from jet.execution.queues import SpscQueue

    queue = SpscQueue(1024)
    queue.offer_chunk(queue_items)
    for item in special:
        queue.offer_special(item)
    frames, finished = [], []
    sender = SenderTasklet("sender", InboundEdgeStream(0, 0, [queue]), frames.append, 1, 2, 0,
                           packet_size_limit=1 << 20, pairs=False, on_finished=finished.append)
    sender.send_limit.on_ack(1 << 20)
    for _ in range(100):
        if sender.call() & 2:
            break
    else:
        raise AssertionError("the sender never finished")
    return frames, finished


def test_the_last_items_carry_done_in_their_frame():
    from jet.cluster.edges.chunk_packets import FLAG_DONE, decode_chunk
    from jet.execution.queues import DONE_ITEM

    frames, finished = _drain_sender(list(range(10)), [DONE_ITEM])
    assert len(frames) == 1, "ten items and DONE: one frame"
    header, entries = decode_chunk(frames[0])
    assert entries == list(range(10)) and header.flags & FLAG_DONE
    assert finished == [IN_BAND], "the relay hears that DONE travelled in band"


def test_a_done_no_frame_can_carry_goes_to_the_relay_with_the_frames_sent():
    from jet.cluster.edges.chunk_packets import FLAG_DONE, FLAG_WATERMARK, decode_chunk
    from jet.core.special_items import Watermark
    from jet.execution.queues import DONE_ITEM

    frames, finished = _drain_sender([1, 2, 3], [Watermark(7), DONE_ITEM])
    headers = [decode_chunk(frame)[0] for frame in frames]
    assert [bool(h.flags & FLAG_DONE) for h in headers] == [False, False], "no DONE travels alone"
    assert headers[1].flags & FLAG_WATERMARK, "the watermark goes after the items"
    assert decode_chunk(frames[0])[1] == [1, 2, 3]
    assert finished == [2], "the receiver is done after the items' frame and the watermark's"
    empty, finished = _drain_sender([], [DONE_ITEM])
    assert empty == [] and finished == [0]
