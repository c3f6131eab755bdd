"""A stateful mapping's snapshot holds its state as it was at the barrier, though the snapshot is
pickled on another thread while the next items change a mutable state in place (the rolling
aggregate's accumulator cell, distinct's seen flag)."""

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors import transform_stateful_p


def _add(state, key, item):
    state[0] += item
    return state[0]


def test_the_saved_state_does_not_change_with_later_items():
    processor = transform_stateful_p("map", lambda item: "k", 0, lambda: [0], _add)()
    outbox = Outbox(1, 100)
    processor.init(outbox, Context(vertex_name="rolling"))
    inbox = Inbox()
    inbox.add_chunk([(0, 1), (0, 2)])
    processor.process(0, inbox)
    assert processor.save_to_snapshot() is True
    saved = [entry for entry in outbox.snapshot_entries if entry[0] == "k"]
    inbox.add_chunk([(0, 10)])
    processor.process(0, inbox)
    assert saved == [("k", (0, [3]))]
