"""The column form of a chunk's items: namedtuples travel as plain tuples and come back as
themselves, anything else as it is, partition ids alongside."""

import pickle
from collections import namedtuple
from typing import NamedTuple

import pytest
from jet.core.item_columns import is_flattenable, pack_items, unpack_items

Point = namedtuple("Point", "x y")


class Bid(NamedTuple):
    auction: int
    price: int
    channel: str


class WithDict(Point):  # no __slots__: instances have a __dict__ the plain tuple would drop
    pass


class WithSlots(Point):
    __slots__ = ()

    def total(self) -> int:
        return self.x + self.y


class OwnReduce(NamedTuple):
    value: int

    def __reduce__(self):
        return (OwnReduce, (self.value * 1,))


class OwnNewArgs(Point):
    __slots__ = ()

    def __getnewargs__(self):
        return (self.x, -self.y)


class OwnItems(Point):
    """Indexing of its own: a slice of it is not its fields."""
    __slots__ = ()

    def __getitem__(self, index):
        return tuple.__getitem__(self, index) if isinstance(index, int) else "not the fields"


def test_only_plain_namedtuples_are_flattened():
    assert is_flattenable(Point) and is_flattenable(Bid) and is_flattenable(WithSlots)
    assert not is_flattenable(tuple) and not is_flattenable(WithDict)
    assert not is_flattenable(OwnReduce) and not is_flattenable(OwnNewArgs) and not is_flattenable(OwnItems)
    assert not is_flattenable(int) and not is_flattenable(str)


@pytest.mark.parametrize("items", [
    [Bid(1, 10, "a"), Bid(2, 20, "b")],
    [Point(1, 2), Bid(1, 10, "a"), "text", (1, 2), None, WithSlots(3, 4), Point(5, 6)],
    [1, "two", (3,), {"four": 4}],
    [WithDict(1, 2)],
    [(1_767_225_600_000 + i, Bid(i, i, "c")) for i in range(50)],
    [(i, Point(i, i)) if i % 2 else (i, "text") for i in range(20)],
    [(True, Point(1, 2)), (2, Point(3, 4))],
    [(2 ** 64, "big"), (-1, "small")],
    [("key", 1), ("other", 2)],
    [(1, 2), (1, 2, 3)],
    [(1, 2), Point(1, 2)],
    [OwnItems(1, 2), Point(3, 4), OwnItems(5, 6)],
    [((i, i + 1), 1_767_312_000_000, Bid(i, i, "c")) for i in range(40)],  # a window's partials
    [(i % 2 == 0, 2 ** 64 + i, "k", Point(i, -i)) for i in range(20)],
    [(1, 2, Point(1, 2)), (1, Point(1, 2))],
    [(1, 2, Point(1, 2)), (1, 2, "text"), (3, 4, Bid(1, 2, "b"))],
    [((i, "k"), 1_767_312_000_000, [Bid(j, i, "c") for j in range(i % 4)] or [Point(i, i)])
     for i in range(30)],  # top_n partials, lists of several lengths and classes
    [(1, [Point(1, 2), "text", (3, 4)]), (2, [])],
    [(1, [Point(1, 2)]), (2, "not a list"), (3, [Point(3, 4)])],
    [(1, [Point(1, 2)]), (2, [])],
])
def test_items_come_back_equal_and_of_their_own_types(items):
    back, partitions = unpack_items(pack_items(items))
    assert partitions is None
    assert back == items
    assert list(map(_types, back)) == list(map(_types, items))


def _types(item):
    """The item's type, and its elements' types for a tuple (a bool must not come back an int)."""
    return type(item), [type(element) for element in item] if isinstance(item, tuple) else None


def test_an_instance_dict_survives():
    item = WithDict(1, 2)
    item.note = "kept"
    (back,), _ = unpack_items(pack_items([item]))
    assert back.note == "kept"


def test_partitions_travel_beside_the_items():
    items = [Bid(i, i * 10, "c") for i in range(300)] + ["x"]
    partitions = [i % 271 for i in range(301)]
    back, back_partitions = unpack_items(pack_items(items, partitions))
    assert back == items and list(back_partitions) == partitions


def test_a_windows_partials_pickle_no_class_per_accumulator():
    items = [((i, i + 1), 1_767_312_000_000, Bid(i, i, "c")) for i in range(500)]
    payload = pack_items(items)
    assert payload.count(b"Bid") == 1
    assert unpack_items(payload)[0] == items


def test_lists_of_events_pickle_no_class_per_event():
    items = [((i, i + 1), 1_767_312_000_000, [Bid(i, j, "c") for j in range(10)]) for i in range(100)]
    payload = pack_items(items)
    assert payload.count(b"Bid") == 1
    back, _ = unpack_items(payload)
    assert back == items and all(type(acc) is list for _, _, acc in back)


def test_flattened_items_pickle_no_class_per_item():
    items = [Bid(i, i, "c") for i in range(1000)]
    payload = pack_items(items)
    assert payload.count(b"Bid") == 1
    assert len(payload) < len(pickle.dumps(items, 5))


@pytest.mark.parametrize("columns, message", [
    ((None, [1], [], None, b"\x00\x00\x00\x00", None), "2 partition ids for 1 items"),
    ((None, [(1, 2)], [Point], b"\x01\x01", None, None), "2 class codes for 1 values"),
    ((None, [(1, 2)], [Point, Bid], None, None, None), "names several"),
    ((None, 1, [], None, None, None), "not lists"),
    (([[1, 2]], [3], [], None, None, None), "2 leading elements for 1 items"),
    (([b"\x00" * 8, [1, 2]], [3], [], None, None, None), "2 leading elements for 1 items"),
    (([1], [3], [], None, None, None), "leading columns are not"),
    (([], [3], [], None, None, None), "leading columns are not"),
    (([[1]], [3, 4], [], None, None, b"\x03\x00\x00\x00"), "adding up to 3 for 2 values"),
    ((None, [3, 4], [], None, None, b"\x02\x00\x00\x00"), "lengths come without leading"),
    ((None, [1], [], None, None), "not a tuple of 6 columns"),
])
def test_malformed_payloads_are_refused(columns, message):
    with pytest.raises(ValueError, match=message):
        unpack_items(pickle.dumps(columns, 5))


def test_a_cycle_after_plain_items_still_travels():
    cyclic: list = [1]
    cyclic.append(cyclic)
    items = [(i, "plain") for i in range(20)] + [(20, cyclic)]
    back, _ = unpack_items(pack_items(items))
    assert back[:20] == items[:20]
    assert back[20][1][1] is back[20][1]


def test_plain_chunks_are_pickled_without_the_memo_and_others_with_it():
    shared = "s" * 10
    plain = [(i, shared) for i in range(20)]
    assert pack_items(plain).count(shared.encode()) == 20  # written for every item
    long_text = "t" * 1000
    with_long = [(i, long_text) for i in range(20)]
    assert pack_items(with_long).count(long_text.encode()) == 1  # the memo keeps one copy
    for items in (plain, with_long):
        assert unpack_items(pack_items(items))[0] == items
