"""Hypothesis strategies of partitioning keys, and key types importable by name, so that worker
and member processes can unpickle them."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from collections import namedtuple
from decimal import Decimal
from fractions import Fraction

from hypothesis import strategies as st


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    label: str


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


Pair = namedtuple("Pair", "left right")


class Badge:
    """Equal by value and hashable, but without a canonical encoding."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Badge) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _scalars_the_oracle_encodes(floats: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2 ** 100), max_value=2 ** 100),
        floats, st.text(), st.binary(), st.dates(), st.datetimes())


other_scalars = st.one_of(
    st.decimals(allow_nan=False), st.fractions(), st.uuids(), st.sampled_from(Colour),
    st.sampled_from(Level), st.datetimes(timezones=st.timezones()), st.times(), st.timedeltas(),
    st.complex_numbers(allow_nan=False), st.builds(Point, st.integers(), st.text()))


def hashable_keys(scalars: st.SearchStrategy) -> st.SearchStrategy:
    """``scalars`` nested in tuples and frozensets."""
    return st.recursive(scalars, lambda children: st.one_of(
        st.lists(children, max_size=4).map(tuple), st.frozensets(children, max_size=5)), max_leaves=12)


def keys_of(hashable: st.SearchStrategy) -> st.SearchStrategy:
    """``hashable`` keys, and lists, tuples, sets and dicts of them, nested."""
    return st.recursive(hashable, lambda children: st.one_of(
        st.lists(children, max_size=3), st.lists(children, max_size=3).map(tuple),
        st.sets(hashable, max_size=4), st.dictionaries(hashable, children, max_size=3)), max_leaves=12)


#: Keys of the types tests/partition_oracle.py encodes (NaN included).
oracle_keys = keys_of(hashable_keys(_scalars_the_oracle_encodes(st.floats())))
#: The same without NaN, so that keys compare equal exactly when they are the same value.
comparable_oracle_keys = keys_of(hashable_keys(_scalars_the_oracle_encodes(st.floats(allow_nan=False))))

_any_hashable = hashable_keys(st.one_of(_scalars_the_oracle_encodes(st.floats()), other_scalars))
#: Keys of every supported type, nested (namedtuples and dataclasses too).
any_keys = keys_of(st.one_of(_any_hashable, st.builds(Pair, _any_hashable, _any_hashable)))
