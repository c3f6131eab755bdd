"""The processor harness with snapshots: it saves, restores into a fresh processor and routes."""

from __future__ import annotations

import pytest

from jet.core.partitioner import murmur_partition
from jet.core.processor import AbstractProcessor, Processor
from jet.core.processors import map_p
from jet.core.snapshot_keys import BroadcastKey
from jet.core.test_support import ProcessorVerificationError, TestSupport, restore_routing


class RunningTotal(Processor):
    """Emits the running sum of its input; ``saves``: whether it keeps the sum in snapshots."""

    saves = True

    def __init__(self) -> None:
        self.total = 0

    def process(self, ordinal, inbox):
        while inbox:
            total = self.total + inbox.peek()
            if not self.outbox.offer(total):
                return
            self.total = total
            inbox.remove()

    def save_to_snapshot(self):
        if self.saves:
            self.outbox.offer_to_snapshot(BroadcastKey("total"), self.total)
        return True

    def restore_from_snapshot(self, inbox):
        self.total = inbox.remove()[1]


class Forgetful(RunningTotal):
    saves = False


def test_a_processor_that_saves_its_state_passes_and_the_harness_took_snapshots():
    support = TestSupport.verify_processor(RunningTotal).input([1, 2, 3])
    support.expect_output([1, 3, 6])
    assert support.snapshots_taken > 0


def test_a_processor_that_forgets_its_state_fails_only_with_snapshots():
    with pytest.raises(ProcessorVerificationError, match="one item at a time, with snapshot and restore"):
        TestSupport.verify_processor(Forgetful).input([1, 2, 3]).expect_output([1, 3, 6])
    support = TestSupport.verify_processor(Forgetful).input([1, 2, 3]).disable_snapshots()
    support.expect_output([1, 3, 6])
    assert support.snapshots_taken == 0


def test_saved_entries_must_pickle():
    class Unpicklable(RunningTotal):
        def save_to_snapshot(self):
            self.outbox.offer_to_snapshot(BroadcastKey("fn"), lambda: self.total)
            return True

    with pytest.raises(ProcessorVerificationError, match="Unpicklable saved a snapshot entry that does not pickle"):
        TestSupport.verify_processor(Unpicklable).input([1]).expect_output([1])


def test_offering_to_the_snapshot_outside_a_save_is_refused():
    class Eager(AbstractProcessor):
        def try_process_item(self, ordinal, item):
            self.outbox.offer_to_snapshot("key", item)
            return True

    with pytest.raises(ProcessorVerificationError, match="outside save_to_snapshot"):
        TestSupport.verify_processor(Eager).input([1]).expect_output([])


def test_a_stateless_processor_passes_with_snapshots():
    support = TestSupport.verify_processor(map_p(lambda x: x * 10)).input(range(5))
    support.expect_output([0, 10, 20, 30, 40])
    assert support.snapshots_taken >= 5


def test_restore_routing_broadcasts_and_routes_keys_to_their_partition_owner():
    saved = [[("apple", 1), (BroadcastKey(0), "p0")], [("kiwi", 2), (BroadcastKey(1), "p1"), (7, 3)]]
    routed = restore_routing(saved, 3)
    for index, entries in enumerate(routed):
        assert [e for e in entries if type(e[0]) is BroadcastKey] == [(BroadcastKey(0), "p0"), (BroadcastKey(1), "p1")]
        keyed = [e for e in entries if type(e[0]) is not BroadcastKey]
        assert keyed == [(key, value) for key, value in [("apple", 1), ("kiwi", 2), (7, 3)]
                         if murmur_partition(key) % 3 == index]
    assert sum(len(entries) for entries in routed) == 3 + 3 * 2


def test_restore_routing_needs_a_positive_count():
    with pytest.raises(ValueError, match="count must be an int >= 1, got 0"):
        restore_routing([], 0)
