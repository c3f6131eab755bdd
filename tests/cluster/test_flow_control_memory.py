"""A slow consumer on the receiving member keeps the receiver's buffer within its window."""

from jet.cluster.edges.flow_control import COMPRESSED_SEQ_UNIT_LOG2, INITIAL_RECEIVE_WINDOW_COMPRESSED
from jet.core import Processor

from tests.cluster.inprocess import InProcessCluster, SlowSink, run_over_one_distributed_edge

ITEMS = 300_000
UNIT = 1 << COMPRESSED_SEQ_UNIT_LOG2
PERIOD_MS = 20


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


def test_receiver_memory_stays_within_the_window_under_a_slow_consumer():
    probe = {"samples": [], "received": []}
    cluster = InProcessCluster(2, flow_control_period_ms=PERIOD_MS)
    try:
        run_over_one_distributed_edge(cluster, MemberZeroSource, lambda: SlowSink(probe), probe, 120)
    finally:
        cluster.close()
    assert sorted(probe["received"]) == list(range(ITEMS))
    samples = probe["samples"]
    windows = [window for _, window, _, _ in samples]
    assert min(windows) < INITIAL_RECEIVE_WINDOW_COMPRESSED // 16, "the window adapted to the slow consumer"
    # What the receiver holds was sent under some limit the receiver granted (acked + window
    # at that time); the sender may reach a limit's unit and overshoot it by one packet.
    highest_limit = 0
    for buffered, _, acked_bytes, limit in samples:
        highest_limit = max(highest_limit, limit)
        assert buffered <= (highest_limit + 2) * UNIT - acked_bytes, (buffered, highest_limit, acked_bytes)
    assert max(b for b, _, _, _ in samples[len(samples) // 2:]) < max(b for b, _, _, _ in samples)
