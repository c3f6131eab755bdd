"""Watermarks across members: senders coalesce their local upstream processors, receivers are
one more queue in every downstream conveyor, so each downstream processor's watermark is the
minimum over every upstream processor of the cluster, idle ones left out."""

import threading
from collections import deque

import pytest
from jet.cluster.edges.chunk_packets import (
    FLAG_WATERMARK,
    WATERMARK_FOOTPRINT,
    chunk_footprint,
    decode_chunk,
    encode_chunk,
    encode_watermark,
    watermark_timestamp,
)
from jet.cluster.links.packets import PacketFormatError
from jet.core import DAG, Edge
from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, Watermark

from tests.cluster.cluster_support import wait_until
from tests.cluster.inprocess import InProcessCluster
from tests.execution.watermark_support import (
    FINISH,
    Recorder,
    ScriptedSource,
    check_arrivals,
    max_watermark,
    watermarks_of,
)

LP = 2


@pytest.fixture(params=[2, 3], ids=["2-members", "3-members"])
def cluster(request):
    cluster = InProcessCluster(request.param)
    yield cluster
    cluster.close()


def cluster_schedule(member_count: int) -> tuple[list, set]:
    """Per upstream processor: items and rising watermarks; the idle ones (one processor of
    member 1, and with three members every processor of member 2) go idle after a low one."""
    sources = [("src", g) for g in range(member_count * LP)]
    idle = {("src", 3)} | ({("src", 4), ("src", 5)} if member_count == 3 else set())
    schedule = []
    for step in range(4):
        for source in sources:
            g = source[1]
            if source not in idle:
                schedule.append((source, [(g, step, k) for k in range(3)]))
                schedule.append((source, Watermark(100 + 10 * step + 3 * ((g * 5) % 7))))
            elif step == 0:
                schedule.append((source, [(g, step, k) for k in range(3)]))
                schedule.append((source, Watermark(g + 1)))
            elif step == 1:  # an item after it would make it active again
                schedule.append((source, IDLE_MESSAGE))
    schedule.extend((source, FINISH) for source in sources)
    return schedule, idle


def run_in_background(cluster, make_dag):
    errors = []

    def run():
        try:
            cluster.run(make_dag, timeout=60)
        except BaseException as error:  # reported by the test
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


@pytest.mark.parametrize("route", ["unicast", "broadcast"])
def test_every_downstream_processor_gets_the_minimum_over_the_clusters_upstream(cluster, route):
    members = cluster.member_count
    schedule, idle = cluster_schedule(members)
    scripts = {}
    for source, step in schedule:
        scripts.setdefault(source, deque()).append(step)
    last_wm = {}
    for source, step in schedule:
        if type(step) is Watermark and step.timestamp != MAX_TIMESTAMP:
            last_wm[source] = step.timestamp
    expected = min(wm for source, wm in last_wm.items() if source not in idle)
    assert expected > max(last_wm[source] for source in idle)  # an idle one would hold it back
    hold = threading.Event()
    arrivals = {}

    def make_dag():
        dag = DAG()
        src = dag.new_vertex("src", lambda: ScriptedSource(scripts, hold), LP)
        rec = dag.new_vertex("rec", lambda: Recorder(arrivals), LP)
        edge = Edge.from_(src).to(rec).distributed()
        dag.edge(edge.broadcast() if route == "broadcast" else edge)
        return dag

    thread, errors = run_in_background(cluster, make_dag)
    recorders = range(members * LP)
    wait_until(lambda: errors or all(watermarks_of(arrivals.get(r, []))[-1:] == [expected]
                                     for r in recorders),
               what=f"every downstream processor reaching watermark {expected}")
    assert not errors, errors
    while_held = {r: watermarks_of(arrivals[r]) for r in recorders}
    hold.set()
    thread.join(60)
    assert not thread.is_alive() and not errors, errors
    every_item = sorted(x for _, step in schedule if type(step) is list for x in step)
    received = sorted(e[2] for r in recorders for e in arrivals[r] if e[0] == "item")
    assert received == (sorted(every_item * (members * LP)) if route == "broadcast" else every_item)
    for r in recorders:
        assert all(wm <= expected for wm in while_held[r]), (r, while_held[r])
        check_arrivals(arrivals[r], schedule, {s: 0 for s in scripts})
        assert watermarks_of(arrivals[r])[-1] == max_watermark(schedule)  # DONE released the rest
    for m, plan in enumerate(cluster.plans):
        for (execution, vertex, ordinal, peer), sender in plan.senders.items():
            receiver = cluster.plans[peer].receivers[(execution, vertex, ordinal, m)]
            assert sender.sent_seq_bytes == receiver.window.acked_seq_bytes


def test_a_watermark_packet_carries_its_timestamp_unpickled():
    frame = encode_watermark(7, 2, 1, 1234)
    header, entries = decode_chunk(frame)
    assert (header.execution_id, header.dest_vertex_id, header.dest_ordinal) == (7, 2, 1)
    assert header.flags == FLAG_WATERMARK and entries == []
    assert watermark_timestamp(frame) == 1234
    assert watermark_timestamp(encode_watermark(7, 2, 1, MAX_TIMESTAMP)) == MAX_TIMESTAMP
    assert watermark_timestamp(encode_watermark(7, 2, 1, -5)) == -5
    assert WATERMARK_FOOTPRINT == chunk_footprint(8, 1)


def test_packets_without_watermarks_decode_as_before():
    header, entries = decode_chunk(encode_chunk(1, 2, 3, ["a", "b"], pairs=False, done=True))
    assert (header.flags, header.count, entries) == (1, 2, ["a", "b"])


def test_a_damaged_watermark_packet_is_refused():
    frame = encode_watermark(1, 2, 3, 9)
    with pytest.raises(PacketFormatError, match="expected 8"):
        decode_chunk(frame[:-1])
