"""Snapshot state goes through pickle when pickle can write it and through cloudpickle when it
refuses (a lambda, a class shipped by value); either way ``pickle.loads`` gives the state back.
A portion of single window frames of events goes as columns and reads back equal."""

from __future__ import annotations

import io
import pickle
from collections import Counter
from typing import Any, NamedTuple

import cloudpickle
import pytest

from jet import AggregateOperations
from jet.core.outbox import MIN_SNAPSHOT_PORTION
from jet.core.processors.windows import aggregate_to_sliding_window_p
from jet.core.sliding_window_policy import sliding_win_policy
from jet.core.state_pickle import dumps_entries, dumps_state, load_entries

from tests.core.snapshot_driver import Driven, context_of, restore_all


def test_plain_data_is_written_by_pickle_itself():
    state = ("window", [((1, "k"), Counter(a=2)), ("x", [1.5, None, b"raw"])])
    data = dumps_state(state)
    assert data == pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == state


def test_a_lambda_in_the_state_goes_through_cloudpickle_and_still_works():
    data = dumps_state(("stateful", [("key", lambda x: x * 3)]))
    vertex, [(key, function)] = pickle.loads(data)
    assert (vertex, key, function(7)) == ("stateful", "key", 21)


def test_an_instance_of_a_class_shipped_by_value_round_trips():
    # A class as a job's pickled functions bring it to a member: by value, found in no module.
    namespace: dict = {}
    exec("class Bidder:\n    def __init__(self, n):\n        self.n = n\n", namespace)
    shipped = pickle.loads(cloudpickle.dumps(namespace["Bidder"]))
    restored = pickle.loads(dumps_state([("k", shipped(41))]))
    assert restored[0][1].n == 41 and type(restored[0][1]).__name__ == "Bidder"


class Offer(NamedTuple):
    auction: int
    bidder: int
    price: int
    channel: str
    date_time: int


def _offers(count: int) -> list[Offer]:
    return [Offer(i % 97, i, (i * 7919) % 1000, ("Google", "Apple", "channel-x" * (i % 3))[i % 3], 1000 + i)
            for i in range(count)]


def _round_trip(entries: list) -> tuple[Any, list]:
    """(the pickle's raw form, the entries read back)."""
    data = dumps_entries("window", entries)
    vertex, loaded = load_entries(io.BytesIO(data))
    assert vertex == "window"
    return pickle.loads(data), loaded


def test_single_frames_of_events_go_as_columns_and_come_back_equal():
    entries = [((offer.bidder, offer.auction), {2000: offer}) for offer in _offers(300)]
    raw, loaded = _round_trip(entries)
    assert raw[1] is None  # the column form
    assert loaded == entries
    assert all(type(value[2000]) is Offer for _, value in loaded)


def test_single_frames_of_lists_of_events_come_back_with_their_lists():
    offers = _offers(400)
    # the first list has an event (what the column form looks at), later ones 0 to 11
    entries = [(f"auction-{a}", {5000 + a: [o for o in offers if o.auction == a][: a % 12]})
               for a in range(1, 41)]
    assert any(not value[5000 + a] for a, (_, value) in enumerate(entries, 1))  # empty lists among them
    raw, loaded = _round_trip(entries)
    assert raw[1] is None
    assert loaded == entries


def test_keys_keep_their_types_through_the_columns():
    offers = _offers(40)
    entries = [(True, {1: offers[0]}), (1, {1: offers[1]})] + [((i, "k"), {1: o}) for i, o in enumerate(offers)]
    _, loaded = _round_trip(entries)
    assert [type(key) for key, _ in loaded] == [type(key) for key, _ in entries]
    assert loaded == entries


@pytest.mark.parametrize("odd_one", [
    {1: "not an event"},                         # an accumulator that is not an event
    {1: Offer(1, 2, 3, "c", 4), 2: Offer(1, 2, 3, "c", 5)},  # two frames
    [Offer(1, 2, 3, "c", 4)],                    # not a frame map at all
])
def test_portions_not_all_single_frames_of_events_come_back_as_they_were(odd_one):
    entries = [(i, {7: offer}) for i, offer in enumerate(_offers(50))]
    entries[0] = ("odd", odd_one)
    raw, loaded = _round_trip(entries)
    assert raw[1] is not None  # the plain form
    assert loaded == entries


def test_lists_of_events_mixed_with_single_events_come_back_as_they_were():
    offers = _offers(60)
    entries = [(i, {7: [offer]} if i % 3 else {7: offer}) for i, offer in enumerate(offers, 1)]
    _, loaded = _round_trip(entries)
    assert loaded == entries
    assert [type(value[7]) for _, value in loaded] == [type(value[7]) for _, value in entries]


def test_events_of_a_class_shipped_by_value_round_trip():
    namespace: dict = {}
    exec("from typing import NamedTuple\nclass Sale(NamedTuple):\n    item: int\n    price: int\n", namespace)
    shipped = pickle.loads(cloudpickle.dumps(namespace["Sale"]))
    entries = [(i, {3: shipped(i, 2 * i)}) for i in range(30)]
    _, loaded = _round_trip(entries)
    assert [(key, value[3].item, value[3].price) for key, value in loaded] == [(i, i, 2 * i) for i in range(30)]


def test_portions_one_after_the_other_are_read_in_order():
    first = [(i, {1: offer}) for i, offer in enumerate(_offers(20))]
    second = [("plain", 42)]
    stream = io.BytesIO(dumps_entries("a", first) + dumps_entries("b", second) + dumps_state(("c", [(1, 2)])))
    assert [load_entries(stream) for _ in range(3)] == [("a", first), ("b", second), ("c", [(1, 2)])]


def test_a_tumbling_window_of_events_restores_the_latest_event_per_key_on_other_counts():
    policy = sliding_win_policy(10_000, 10_000)
    supplier = aggregate_to_sliding_window_p(_bidder_auction, policy, AggregateOperations.max_by(_latest))
    offers = _offers(3000)
    saved = []
    for index in range(2):
        driven = Driven(supplier, context_of(index, 2))
        driven.outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION
        driven.process([(o.date_time, o) for o in offers if hash(_bidder_auction(o)) % 2 == index])
        saved.append(driven.save())
    for count in (1, 3):
        restored = restore_all(supplier, saved, count)
        state = {key: acc for driven in restored for frame in driven.processor.frames.values()
                 for key, acc in frame.items()}
        expected: dict = {}
        for offer in offers:
            key = _bidder_auction(offer)
            if key not in expected or _latest(offer) > _latest(expected[key]):
                expected[key] = offer
        assert state == expected


def _bidder_auction(offer: Offer) -> tuple:
    return offer.bidder % 50, offer.auction


def _latest(offer: Offer) -> tuple:
    return offer.date_time, offer
