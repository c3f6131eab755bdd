"""Partitioning: which of the 271 partitions a key belongs to.

The default partitioner must give the same answer in every member process, so it hashes a
canonical byte encoding of the key with MurmurHash3 (x86_32, seed 0x01000193, as Jet does).
Python's ``hash()`` of ``str`` and ``bytes`` is randomised per process; the fast
``HashPartitioner`` is therefore only allowed on local edges.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, Callable, Protocol, runtime_checkable

import mmh3

PARTITION_COUNT = 271
MURMUR_SEED = 0x01000193
_INT32_MIN = -(2 ** 31)
_INT64 = struct.Struct(">q")
_DOUBLE = struct.Struct(">d")


@runtime_checkable
class Partitioner(Protocol):
    """Maps a key to a partition id in ``range(partition_count)``."""

    #: True when every process computes the same partition for the same key. Only stable
    #: partitioners may be used on distributed edges.
    is_stable: bool

    def partition(self, key: Any, partition_count: int) -> int:
        ...


def canonical_bytes(key: Any) -> bytes:
    """A byte encoding of ``key`` that is the same in every process.

    str as UTF-8, int as 8 big-endian bytes (arbitrary size ints by their two's complement),
    an integral float like the equal int (so keys equal in Python land in one partition),
    bytes as they are, tuples element by element, anything else pickled.
    """
    kind = type(key)
    if kind is str:
        return key.encode("utf-8", "surrogatepass")
    if kind is int or kind is bool:
        return _int_bytes(key)
    if kind is bytes:
        return key
    if kind is tuple:
        return b"\x1e".join([canonical_bytes(element) for element in key])
    if kind is float:
        if key.is_integer():
            return _int_bytes(int(key))
        return _DOUBLE.pack(key)
    if key is None:
        return b"\x00None"
    return pickle.dumps(key, protocol=4)


def _int_bytes(value: int) -> bytes:
    if -(2 ** 63) <= value < 2 ** 63:
        return _INT64.pack(value)
    length = (value.bit_length() + 8) // 8
    return value.to_bytes(length, "big", signed=True)


def murmur_partition(key: Any, partition_count: int = PARTITION_COUNT) -> int:
    """Jet's default: MurmurHash3-x86_32 of the key's bytes, ``abs(h) % n`` (``INT_MIN`` -> 0)."""
    # A str is encoded here rather than in canonical_bytes (one Python call less per key).
    # mmh3 is always given bytes: given a str with a lone surrogate, mmh3 4.x crashes.
    data = key.encode("utf-8", "surrogatepass") if type(key) is str else canonical_bytes(key)
    h = mmh3.hash(data, MURMUR_SEED, signed=True)
    return 0 if h == _INT32_MIN else abs(h) % partition_count


class MurmurHashPartitioner:
    """The default, stable partitioner (valid on local and distributed edges)."""

    is_stable = True

    def partition(self, key: Any, partition_count: int) -> int:
        return murmur_partition(key, partition_count)

    def __repr__(self) -> str:
        return "MurmurHashPartitioner()"


class HashPartitioner:
    """``hash(key) % n``: fast, but differs between processes, so local edges only."""

    is_stable = False

    def partition(self, key: Any, partition_count: int) -> int:
        return hash(key) % partition_count

    def __repr__(self) -> str:
        return "HashPartitioner()"


DEFAULT_PARTITIONER = MurmurHashPartitioner()
HASH_PARTITIONER = HashPartitioner()


def key_to_partition_fn(partitioner: Partitioner,
                        partition_count: int = PARTITION_COUNT) -> Callable[[Any], int]:
    """A one-argument function from key to partition, as cheap as the partitioner allows."""
    if isinstance(partitioner, MurmurHashPartitioner):
        if partition_count == PARTITION_COUNT:
            return murmur_partition
        return lambda key: murmur_partition(key, partition_count)
    if isinstance(partitioner, HashPartitioner):
        return lambda key: hash(key) % partition_count
    return lambda key: partitioner.partition(key, partition_count)
