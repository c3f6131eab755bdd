"""A hash join's lookup tables are saved in pieces over several calls and restored whole, from
one processor's copy, on any processor count; a snapshot from before pieces still restores."""

from jet.core.outbox import MIN_SNAPSHOT_PORTION
from jet.core.snapshot_keys import BroadcastKey
from jet.pipeline.hash_join_n import hash_join_n_p
from jet.pipeline.join_processors import HashJoinP

from tests.core.snapshot_driver import Driven, context_of, restore_all

KEYS = 5000


def _key(item):
    return item % KEYS


def _pair(item, match):
    return item, match


def _joiner():
    return HashJoinP(_key, _pair)


def _table() -> dict:
    return {key: [key, key + KEYS] for key in range(KEYS)}


def test_a_joiner_saves_its_table_in_pieces_and_every_new_joiner_restores_it_whole():
    saved = []
    for index in range(2):
        driven = Driven(_joiner, context_of(index, 2))
        driven.outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION
        driven.process([_table()], ordinal=1)
        saved.append(driven.save())
        assert driven.save_calls > 1
    for driven in restore_all(_joiner, saved, 3):
        assert driven.processor._table == _table()


def test_a_joiner_restores_a_table_saved_whole_before_pieces():
    old = [(BroadcastKey(("table", 0)), _table()), (BroadcastKey(("table", 1)), _table())]
    (driven,) = restore_all(_joiner, [old], 1)
    assert driven.processor._table == _table()


def _triple(item, first, second):
    return item, first, second


def test_a_joiner_of_two_lookup_sides_saves_both_tables_in_pieces():
    supplier = hash_join_n_p([_key, _key], _triple, False, False)
    driven = Driven(supplier, context_of(0, 1))
    driven.outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION
    driven.process([_table()], ordinal=1)
    driven.process([{key: ["second"] for key in range(KEYS)}], ordinal=2)
    saved = driven.save()
    assert driven.save_calls > 1
    (restored,) = restore_all(supplier, [saved], 1)
    assert restored.processor._tables == [_table(), {key: ["second"] for key in range(KEYS)}]
