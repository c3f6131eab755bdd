"""A slow consumer on the receiving member keeps the receiver's buffer within its window."""

import time

from jet.core import DAG, Edge, Processor
from jet.cluster.flow_control import COMPRESSED_SEQ_UNIT_LOG2, INITIAL_RECEIVE_WINDOW_COMPRESSED

from tests.cluster.inprocess import InProcessCluster

ITEMS = 300_000
UNIT = 1 << COMPRESSED_SEQ_UNIT_LOG2


class MemberZeroSource(Processor):
    """Emits ITEMS numbers on member 0 only."""

    def complete(self):
        if self.context.member_index != 0:
            return True
        if not hasattr(self, "_left"):
            self._left = iter(range(ITEMS))
        chunk = [x for _, x in zip(range(1024), self._left)]
        if not chunk:
            return True
        self.outbox.offer_chunk(chunk)
        return False


class SlowSink(Processor):
    """A blocking consumer of about 100k items/s that samples the receiver's buffer."""

    is_cooperative = False

    def __init__(self, probe):
        self._probe = probe

    def process(self, ordinal, inbox):
        if self.context.member_index == 1:
            receiver = self._probe["receiver"]
            self._probe["samples"].append(
                (time.monotonic(), receiver.buffered_bytes, receiver.window.window_compressed))
        chunk = inbox.take_chunk(100)
        time.sleep(0.001)
        self._probe["received"].extend(chunk)


def test_receiver_memory_stays_within_the_window_under_a_slow_consumer():
    probe = {"samples": [], "received": []}
    cluster = InProcessCluster(2, flow_control_period_ms=20)

    def make_dag():
        dag = DAG()
        source = dag.new_vertex("source", MemberZeroSource, 1)
        sink = dag.new_vertex("sink", lambda: SlowSink(probe), 1)
        dag.edge(Edge.between(source, sink).distributed())
        return dag

    def remember_receiver(plans):
        (probe["receiver"],) = plans[1].receivers.values()
        (probe["sender"],) = plans[0].senders.values()

    try:
        cluster.run(make_dag, timeout=120, on_built=remember_receiver)
    finally:
        cluster.close()
    assert sorted(probe["received"]) == list(range(ITEMS))
    samples = probe["samples"]
    windows = [window for _, _, window in samples]
    assert min(windows) < INITIAL_RECEIVE_WINDOW_COMPRESSED // 16, "the window adapted to the slow consumer"
    settled = samples[len(samples) // 2:]
    worst = max(buffered for _, buffered, _ in settled)
    # acked + window bounds what the sender may have sent; one packet may overshoot
    assert worst <= (max(w for _, _, w in settled) + 2) * UNIT, worst
    assert probe["sender"].packets_sent > 10
