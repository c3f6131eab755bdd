"""A sink's pending transactions through the snapshot phases: every one recorded, however many
waited, and committed once."""

from __future__ import annotations

from jet.connectors.transactions import UnboundedTransactions
from jet.core.outbox import MIN_SNAPSHOT_PORTION, Outbox


def _record(txns: UnboundedTransactions, outbox: Outbox) -> tuple[list, int]:
    """Phase 1 as the engine runs it: call until True, taking the offered entries after each call."""
    recorded, calls = [], 0
    while True:
        calls += 1
        done = txns.prepare(outbox)
        recorded.extend(outbox.snapshot_entries)
        outbox.snapshot_entries = []
        if done:
            return recorded, calls


def test_more_pending_transactions_than_one_call_may_offer_are_all_recorded_and_committed():
    committed: list = []
    txns = UnboundedTransactions("files", committed.append)
    outbox = Outbox(1, 10, snapshot_capacity=MIN_SNAPSHOT_PORTION)
    count = 3 * MIN_SNAPSHOT_PORTION + 5
    for number in range(count):  # as after snapshots that failed: all still pending
        txns.finished(0, number, f"file-{number}")
    recorded, calls = _record(txns, outbox)
    assert calls > 1 and not txns.recording
    assert sorted(key.key[2] for key, _ in recorded) == list(range(count))
    txns.finished(0, count, "after the barrier")  # waits for the next snapshot
    txns.finish(True)
    assert committed == [f"file-{number}" for number in range(count)]
    assert [txn for _, _, txn in txns.pending] == ["after the barrier"]


def test_a_failed_snapshot_keeps_every_transaction_for_the_next():
    committed: list = []
    txns = UnboundedTransactions("files", committed.append)
    outbox = Outbox(1, 10, snapshot_capacity=MIN_SNAPSHOT_PORTION)
    for number in range(2 * MIN_SNAPSHOT_PORTION):
        txns.finished(1, number, number)
    _record(txns, outbox)
    txns.finish(False)
    assert committed == []
    recorded, _ = _record(txns, outbox)
    assert len(recorded) == 2 * MIN_SNAPSHOT_PORTION
    txns.finish(True)
    assert committed == list(range(2 * MIN_SNAPSHOT_PORTION))
