"""The canonical byte encoding of partitioning keys: the same bytes in every process.

Every member must put a key in the same partition, so a key is hashed from bytes that depend only
on its value, never on the process (``hash()`` seeds, set iteration order, object addresses).
Keys equal in Python get equal bytes, because a grouping stage merges equal keys: ``1``,
``1.0``, ``True`` and ``Decimal(1)`` encode alike, as do a tuple and an equal namedtuple, or a
``set`` and an equal ``frozenset``.

The encoding (``docs/architecture.md``, Partitioning):

- ``str``: its UTF-8 bytes (``surrogatepass``), no tag. Every other type starts with a tag byte
  from 0x80-0xBF, which no UTF-8 text starts with, so a str never collides with another type.
- ``None``: ``80``. ``int``/``bool`` in the signed 64-bit range: ``81`` + 8 bytes big-endian two's
  complement; other ints ``82`` + their shortest big-endian two's complement.
- ``float``: an integral float as the equal int; otherwise ``83`` + IEEE 754 double, big-endian.
  ``complex`` with a zero imaginary part as its real part, else ``85`` + real and imaginary doubles.
  ``Decimal``/``Fraction`` as the equal int or float when there is one, else ``84`` + numerator
  and denominator (lowest terms), each as an element (below).
- ``bytes``/``bytearray``/``memoryview``: ``86`` + the bytes.
- Containers: a tag, then each element as a 4-byte big-endian length and the element's encoding.
  ``tuple`` and namedtuples ``87`` (in order); ``list`` ``88`` (in order); ``set``/``frozenset``
  ``89`` (element encodings sorted); ``dict`` ``8A`` (key and value encodings as pairs, the pairs
  sorted by key encoding).
- Dataclasses: ``8B`` + the class's ``module.qualname`` and the compared fields' values, as elements.
  Enums: ``8C`` + ``module.qualname`` and the member name, as elements.
- ``datetime``: naive ``8D`` + microseconds since 0001-01-01 (8 bytes); aware ``8E`` + microseconds
  since 0001-01-01 UTC. ``date`` ``8F`` + proleptic ordinal; ``time`` naive ``90``/aware ``91``
  + microseconds of the day (aware: minus the UTC offset); ``timedelta`` ``92`` + its microseconds
  encoded as an int.
  ``UUID`` ``93`` + its 16 bytes.
- A subclass of str, int, float, bytes or tuple that keeps its base's ``__eq__`` and
  ``__hash__`` (``IntEnum``, ``StrEnum``, namedtuples) encodes as its base.

Any other type has no canonical encoding: :func:`canonical_bytes` raises
:class:`UnsupportedKeyError`, so a distributed edge refuses the key instead of splitting it.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import struct
import uuid
import weakref
from decimal import Decimal
from itertools import repeat
from operator import itemgetter
from fractions import Fraction
from typing import Any, Callable

TAG_NONE = 0x80
TAG_INT = 0x81
TAG_BIG_INT = 0x82
TAG_FLOAT = 0x83
TAG_RATIONAL = 0x84
TAG_COMPLEX = 0x85
TAG_BYTES = 0x86
TAG_TUPLE = 0x87
TAG_LIST = 0x88
TAG_SET = 0x89
TAG_DICT = 0x8A
TAG_DATACLASS = 0x8B
TAG_ENUM = 0x8C
TAG_NAIVE_DATETIME = 0x8D
TAG_AWARE_DATETIME = 0x8E
TAG_DATE = 0x8F
TAG_NAIVE_TIME = 0x90
TAG_AWARE_TIME = 0x91
TAG_TIMEDELTA = 0x92
TAG_UUID = 0x93

SUPPORTED_KEY_TYPES = (
    "None, bool, int, float, complex, Decimal, Fraction, str, bytes, bytearray, tuple, namedtuple,"
    " list, set, frozenset, dict, dataclass, Enum, datetime, date, time, timedelta and UUID"
    " (containers and dataclasses of these)")

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
TAGGED_INT64 = struct.Struct(">Bq")
_TAGGED_DOUBLE = struct.Struct(">Bd")
_TAGGED_TWO_DOUBLES = struct.Struct(">Bdd")
_LENGTH = struct.Struct(">I")
_INT64_LENGTH = TAGGED_INT64.size
_INT64_ELEMENT = struct.Struct(">IBq")  # an int64 element of a container: length, tag, value
_INT64_PAIR = struct.Struct(">BIBqIBq")  # a container of two int64s
_NONE = bytes([TAG_NONE])
_DATETIME_ORIGIN = datetime.datetime(1, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)


class UnsupportedKeyError(TypeError):
    """A key whose type has no canonical encoding (it could land in different partitions on
    different members), used where the partition must be the same in every process."""

    def __init__(self, key_type: type) -> None:
        self.key_type = key_type
        super().__init__(
            f"a key of type {_qualified_name(key_type)} cannot be partitioned the same way on every"
            f" member, so a distributed edge refuses it. Supported key types: {SUPPORTED_KEY_TYPES}."
            " Return such a key from the key function (for example a tuple of the object's fields),"
            " or keep the edge local.")


def canonical_bytes(key: Any) -> bytes:
    """The canonical encoding of ``key`` (see the module docstring); equal keys get equal bytes.

    Raises :class:`UnsupportedKeyError` naming the type of ``key``, or of the element of ``key``,
    that has no canonical encoding.
    """
    kind = type(key)
    if kind is str:
        return key.encode("utf-8", "surrogatepass")
    if kind is int and INT64_MIN <= key <= INT64_MAX:
        return TAGGED_INT64.pack(TAG_INT, key)
    encode = _ENCODERS.get(kind) or _encoder_for_type(kind)
    return encode(key)


_STR_ONLY, _INT_ONLY, _TUPLE_ONLY, _PAIR = {str}, {int}, {tuple}, {2}


def canonical_bytes_of_all(keys: list) -> list[bytes] | None:
    """``[canonical_bytes(key) for key in keys]`` in whole-list C passes when every key is a
    ``str``, every key a 64-bit ``int``, or every key a plain tuple of two of them (the
    commonest grouping keys); None for any other list, whose keys go one by one."""
    kinds = set(map(type, keys))
    try:
        if kinds == _STR_ONLY:
            return list(map(str.encode, keys, repeat("utf-8"), repeat("surrogatepass")))
        if kinds == _INT_ONLY:
            return list(map(TAGGED_INT64.pack, repeat(TAG_INT), keys))
        if kinds == _TUPLE_ONLY and set(map(len, keys)) == _PAIR:
            firsts, seconds = list(map(itemgetter(0), keys)), list(map(itemgetter(1), keys))
            if set(map(type, firsts)) | set(map(type, seconds)) == _INT_ONLY:
                size, tag = repeat(_INT64_LENGTH), repeat(TAG_INT)
                return list(map(_INT64_PAIR.pack, repeat(TAG_TUPLE), size, tag, firsts, size, tag, seconds))
    except struct.error:  # an int beyond 64 bits: encoded otherwise
        pass
    return None


def _encode_int(value: int) -> bytes:
    if INT64_MIN <= value <= INT64_MAX:
        return TAGGED_INT64.pack(TAG_INT, value)
    length = (value.bit_length() + 8) // 8
    return bytes([TAG_BIG_INT]) + value.to_bytes(length, "big", signed=True)


def _encode_float(value: float) -> bytes:
    if value.is_integer():
        return _encode_int(int(value))
    return _TAGGED_DOUBLE.pack(TAG_FLOAT, value)


def _encode_complex(value: complex) -> bytes:
    if value.imag == 0:
        return _encode_float(value.real)
    return _TAGGED_TWO_DOUBLES.pack(TAG_COMPLEX, value.real, value.imag)


def _encode_ratio(numerator: int, denominator: int) -> bytes:
    """A rational number (lowest terms, positive denominator) as the equal int or float if any."""
    if denominator == 1:
        return _encode_int(numerator)
    try:
        nearest = numerator / denominator
    except OverflowError:
        nearest = None
    if nearest is not None and nearest.as_integer_ratio() == (numerator, denominator):
        return _TAGGED_DOUBLE.pack(TAG_FLOAT, nearest)
    return _tagged_elements(TAG_RATIONAL, [_encode_int(numerator), _encode_int(denominator)])


def _encode_decimal(value: Decimal) -> bytes:
    if value.is_snan():  # not hashable either: it cannot be a grouping key
        raise UnsupportedKeyError(Decimal)
    if not value.is_finite():
        return _encode_float(float(value))
    return _encode_ratio(*value.as_integer_ratio())


def _encode_fraction(value: Fraction) -> bytes:
    return _encode_ratio(value.numerator, value.denominator)


def _encode_bytes(value: bytes | bytearray | memoryview) -> bytes:
    return bytes([TAG_BYTES]) + bytes(value)


def _tagged_elements(tag: int, encodings: list[bytes]) -> bytes:
    """``tag`` then every encoding as a 4-byte length and the bytes."""
    pack = _LENGTH.pack
    parts = [bytes([tag])]
    for encoding in encodings:
        parts.append(pack(len(encoding)))
        parts.append(encoding)
    return b"".join(parts)


def _sequence_encoder(tag: int) -> Callable[[Any], bytes]:
    """The encoder of an ordered container: ``_tagged_elements`` in one loop, with 64-bit ints
    (the commonest elements of key tuples) packed with their length in one call, and a pair of
    them in one."""
    tag_byte, pack, pack_int = bytes([tag]), _LENGTH.pack, _INT64_ELEMENT.pack
    pack_pair = _INT64_PAIR.pack

    def encode(value: tuple | list) -> bytes:
        if len(value) == 2:
            first, second = value
            if type(first) is int and type(second) is int:
                try:
                    return pack_pair(tag, _INT64_LENGTH, TAG_INT, first, _INT64_LENGTH, TAG_INT, second)
                except struct.error:  # beyond 64 bits
                    pass
        parts = [tag_byte]
        for element in value:
            if type(element) is int and INT64_MIN <= element <= INT64_MAX:
                parts.append(pack_int(_INT64_LENGTH, TAG_INT, element))
                continue
            encoding = canonical_bytes(element)
            parts.append(pack(len(encoding)))
            parts.append(encoding)
        return b"".join(parts)
    return encode


_encode_tuple = _sequence_encoder(TAG_TUPLE)
_encode_list = _sequence_encoder(TAG_LIST)


def _encode_set(value: set | frozenset) -> bytes:
    return _tagged_elements(TAG_SET, sorted(canonical_bytes(element) for element in value))


def _encode_dict(value: dict) -> bytes:
    pairs = sorted((canonical_bytes(k), canonical_bytes(v)) for k, v in value.items())
    return _tagged_elements(TAG_DICT, [encoding for pair in pairs for encoding in pair])


def _encode_naive_micros(tag: int, micros: int) -> bytes:
    return TAGGED_INT64.pack(tag, micros)


def _encode_datetime(value: datetime.datetime) -> bytes:
    # Python's own datetime hash ignores fold (equal datetimes may differ in it): so do we.
    value = value.replace(fold=0)
    micros = (value.replace(tzinfo=None) - _DATETIME_ORIGIN) // _MICROSECOND
    offset = value.utcoffset()
    if offset is None:
        return _encode_naive_micros(TAG_NAIVE_DATETIME, micros)
    return _encode_naive_micros(TAG_AWARE_DATETIME, micros - offset // _MICROSECOND)


def _encode_date(value: datetime.date) -> bytes:
    return TAGGED_INT64.pack(TAG_DATE, value.toordinal())


def _encode_time(value: datetime.time) -> bytes:
    value = value.replace(fold=0)
    micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    offset = value.utcoffset()
    if offset is None:
        return _encode_naive_micros(TAG_NAIVE_TIME, micros)
    return _encode_naive_micros(TAG_AWARE_TIME, micros - offset // _MICROSECOND)


def _encode_timedelta(value: datetime.timedelta) -> bytes:
    return bytes([TAG_TIMEDELTA]) + _encode_int(value // _MICROSECOND)  # may exceed 64 bits


def _encode_uuid(value: uuid.UUID) -> bytes:
    return bytes([TAG_UUID]) + value.bytes


def _encode_enum(value: enum.Enum) -> bytes:
    return _tagged_elements(TAG_ENUM, [_qualified_name(type(value)).encode(), value.name.encode()])


def _encode_dataclass(value: Any) -> bytes:
    fields = [canonical_bytes(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare]
    return _tagged_elements(TAG_DATACLASS, [_qualified_name(type(value)).encode(), *fields])


_ENCODERS: dict[type, Callable[[Any], bytes]] = {
    str: canonical_bytes,
    int: _encode_int,
    bool: _encode_int,
    float: _encode_float,
    complex: _encode_complex,
    Decimal: _encode_decimal,
    Fraction: _encode_fraction,
    type(None): lambda _none: _NONE,
    bytes: _encode_bytes,
    bytearray: _encode_bytes,
    memoryview: _encode_bytes,
    tuple: _encode_tuple,
    list: _encode_list,
    set: _encode_set,
    frozenset: _encode_set,
    dict: _encode_dict,
    datetime.datetime: _encode_datetime,
    datetime.date: _encode_date,
    datetime.time: _encode_time,
    datetime.timedelta: _encode_timedelta,
    uuid.UUID: _encode_uuid,
}

# A subclass that compares and hashes as its base equals instances of the base, so it takes the
# base's encoding, of the value converted by the base's own method (a subclass may override
# __str__, __int__ or __iter__ without changing equality).
_VALUE_BASES: dict[type, Callable[[Any], Any]] = {
    str: str.__str__, int: int.__int__, float: float.__float__, bytes: bytes.__bytes__,
    tuple: lambda key: tuple(tuple.__iter__(key)),
}


# Weak: a job's own classes (unpickled by value) must not outlive the job on a member.
_DERIVED_ENCODERS: "weakref.WeakKeyDictionary[type, Callable[[Any], bytes]]" = weakref.WeakKeyDictionary()


def _encoder_for_type(kind: type) -> Callable[[Any], bytes]:
    """The encoder of a type not in ``_ENCODERS``, or UnsupportedKeyError."""
    encoder = _DERIVED_ENCODERS.get(kind)
    if encoder is None:
        encoder = _derived_encoder(kind)
        if encoder is None:
            raise UnsupportedKeyError(kind)
        _DERIVED_ENCODERS[kind] = encoder
    return encoder


def _derived_encoder(kind: type) -> Callable[[Any], bytes] | None:
    for base, to_base in _VALUE_BASES.items():
        if issubclass(kind, base):
            if kind.__eq__ is base.__eq__ and kind.__hash__ is base.__hash__:
                base_encoder = _ENCODERS[base]
                return lambda key: base_encoder(to_base(key))
            break
    if issubclass(kind, enum.Enum):
        return _encode_enum
    if dataclasses.is_dataclass(kind):
        return _encode_dataclass
    if issubclass(kind, dict) and kind.__eq__ is dict.__eq__:
        return _encode_dict
    return None


def _qualified_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__
