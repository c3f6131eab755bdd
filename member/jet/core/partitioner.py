"""Partitioning: which of the 271 partitions a key belongs to.

The default partitioner must give the same answer in every member process, so it hashes the
canonical byte encoding of the key (:mod:`jet.core.key_encoding`) with MurmurHash3 (x86_32, seed
0x01000193, as Jet does). A key type without a canonical encoding is refused on a distributed edge
(:class:`UnsupportedKeyError`) and hashed with ``hash()`` on a local one. Python's ``hash()`` of
``str`` and ``bytes`` is randomised per process; the fast ``HashPartitioner`` is therefore only
allowed on local edges.
"""

from __future__ import annotations

from itertools import compress, repeat
from typing import Any, Callable, Protocol, runtime_checkable

import mmh3

from jet.core.key_encoding import (INT64_MAX, INT64_MIN, TAG_INT, TAGGED_INT64, UnsupportedKeyError, canonical_bytes,
                                  canonical_bytes_of_all)

__all__ = ["PARTITION_COUNT", "MURMUR_SEED", "Partitioner", "MurmurHashPartitioner", "HashPartitioner",
           "DEFAULT_PARTITIONER", "HASH_PARTITIONER", "UnsupportedKeyError", "canonical_bytes",
           "murmur_partition", "murmur_partitions", "local_partition", "key_to_partition_fn", "chunk_partitions_fn"]

PARTITION_COUNT = 271
MURMUR_SEED = 0x01000193
_INT32_MIN = -(2 ** 31)
_pack_tagged_int = TAGGED_INT64.pack


@runtime_checkable
class Partitioner(Protocol):
    """Maps a key to a partition id in ``range(partition_count)``."""

    #: True when every process computes the same partition for the same key. Only stable
    #: partitioners may be used on distributed edges.
    is_stable: bool

    def partition(self, key: Any, partition_count: int) -> int:
        ...


def murmur_partition(key: Any, partition_count: int = PARTITION_COUNT) -> int:
    """Jet's default: MurmurHash3-x86_32 of the key's canonical bytes, ``abs(h) % n``
    (``INT_MIN`` -> 0): the same in every process.

    Raises :class:`UnsupportedKeyError` naming the type when the key has no canonical encoding.
    """
    # A str or int is encoded here rather than in canonical_bytes (one Python call less per key).
    # mmh3 is always given bytes: given a str with a lone surrogate, mmh3 4.x crashes.
    kind = type(key)
    if kind is str:
        data = key.encode("utf-8", "surrogatepass")
    elif kind is int and INT64_MIN <= key <= INT64_MAX:
        data = _pack_tagged_int(TAG_INT, key)
    else:
        data = canonical_bytes(key)
    h = mmh3.hash(data, MURMUR_SEED, signed=True)
    return 0 if h == _INT32_MIN else abs(h) % partition_count


def murmur_partitions(keys: list, partition_count: int = PARTITION_COUNT) -> list[int]:
    """``[murmur_partition(key) for key in keys]``, in whole-list C passes for the key shapes
    :func:`~jet.core.key_encoding.canonical_bytes_of_all` encodes at once.

    Raises :class:`UnsupportedKeyError` as :func:`murmur_partition` does.
    """
    encoded = canonical_bytes_of_all(keys)
    if encoded is None:
        return list(map(murmur_partition, keys, repeat(partition_count)))
    return _partitions_of_encoded(encoded, partition_count)


def _partitions_of_encoded(encoded: list[bytes], partition_count: int) -> list[int]:
    """:func:`murmur_partition` of keys already encoded, in whole-list C passes."""
    hashes = list(map(mmh3.hash, encoded, repeat(MURMUR_SEED), repeat(True)))
    partitions = list(map(int.__mod__, map(abs, hashes), repeat(partition_count)))
    if _INT32_MIN in hashes:
        partitions = [0 if h == _INT32_MIN else p for h, p in zip(hashes, partitions)]
    return partitions


def local_partition(key: Any, partition_count: int = PARTITION_COUNT) -> int:
    """:func:`murmur_partition`, or for a hashable key without a canonical encoding
    ``hash(key) % n``: consistent with equality inside this process, so fit for local edges only.
    """
    if type(key) is str:
        data = key.encode("utf-8", "surrogatepass")
    else:
        try:
            data = canonical_bytes(key)
        except UnsupportedKeyError as unsupported:
            try:
                return hash(key) % partition_count
            except TypeError:  # unhashable
                raise unsupported from None
    h = mmh3.hash(data, MURMUR_SEED, signed=True)
    return 0 if h == _INT32_MIN else abs(h) % partition_count


class MurmurHashPartitioner:
    """The default, stable partitioner (valid on local and distributed edges): ``partition``
    raises :class:`UnsupportedKeyError` for a key without a canonical encoding."""

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


def _key_of_partition_0() -> str:
    number = 0
    while murmur_partition(f"first-processor-{number}") != 0:
        number += 1
    return f"first-processor-{number}"


FIRST_PROCESSOR_KEY = _key_of_partition_0()
"""A key in partition 0: an all-to-one edge on it feeds the first processor of its vertex, on
member 0 whatever the member count (partition ``p`` belongs to member ``p % members``), when
the vertex has one processor per member."""
HASH_PARTITIONER = HashPartitioner()


def key_to_partition_fn(partitioner: Partitioner, partition_count: int = PARTITION_COUNT, *,
                        distributed: bool = False) -> Callable[[Any], int]:
    """A one-argument function from key to partition, as cheap as the partitioner allows.

    With the default partitioner a ``distributed`` edge refuses keys without a canonical
    encoding (:class:`UnsupportedKeyError`); a local edge hashes them with ``hash()``.
    """
    if isinstance(partitioner, MurmurHashPartitioner):
        partition = murmur_partition if distributed else local_partition
        if partition_count == PARTITION_COUNT:
            return partition
        return lambda key: partition(key, partition_count)
    if isinstance(partitioner, HashPartitioner):
        return lambda key: hash(key) % partition_count
    return lambda key: partitioner.partition(key, partition_count)


#: Chunks of keys all of one of these exact types share a memo of their partitions. Other keys
#: may be unhashable, or equal to a memoized key without a canonical encoding of their own (a
#: NumPy integer equals an int), which the memo would then accept where ``murmur_partition``
#: refuses it.
_INT_ONLY, _STR_ONLY = {int}, {str}
#: Entries a memo holds before it starts again (under 1 MB, each collector of a keyed edge
#: has one): hot keys come back at once.
PARTITION_MEMO_LIMIT = 4096
#: Longer strings are not memoized: the memo would keep them alive.
PARTITION_MEMO_MAX_STR = 64
_MISSING = -1


class _MemoizedPartitions:
    """The partitions of a chunk's keys for the default partitioner. While every key is an
    ``int``, or every key a short ``str``, each is looked up in a bounded memo first: a dict
    lookup costs a tenth of encoding and hashing the key in Python, and a stream's keys repeat
    (hot auctions, active users). Keys the memo misses, and chunks of the key shapes
    :func:`~jet.core.key_encoding.canonical_bytes_of_all` encodes at once (pairs of ints), are
    hashed in whole-list C passes; for keys with a canonical encoding a local edge's
    :func:`local_partition` is :func:`murmur_partition`."""

    __slots__ = ("_partition_of", "_memo", "_count")

    def __init__(self, partition_of: Callable[[Any], int], partition_count: int = PARTITION_COUNT) -> None:
        self._partition_of = partition_of
        self._count = partition_count
        self._memo: dict[Any, int] = {}

    def _all_at_once(self, keys: list) -> list[int]:
        encoded = canonical_bytes_of_all(keys)
        if encoded is None:
            return list(map(self._partition_of, keys))
        return _partitions_of_encoded(encoded, self._count)

    def __call__(self, keys: list) -> list[int]:
        kinds = set(map(type, keys))
        if not (kinds == _INT_ONLY or kinds == _STR_ONLY and max(map(len, keys)) <= PARTITION_MEMO_MAX_STR):
            return self._all_at_once(keys)
        memo = self._memo
        partitions = list(map(memo.get, keys, repeat(_MISSING)))
        if _MISSING in partitions:
            # each new key once, then the whole chunk again from the memo: no Python loop per key
            if len(memo) > PARTITION_MEMO_LIMIT:
                memo.clear()
                new_keys = set(keys)
            else:
                new_keys = set(compress(keys, map(_MISSING.__eq__, partitions)))
            new_keys = list(new_keys)
            memo.update(zip(new_keys, self._all_at_once(new_keys)))
            partitions = list(map(memo.__getitem__, keys))
        return partitions


def chunk_partitions_fn(partitioner: Partitioner, partition_count: int = PARTITION_COUNT, *,
                        distributed: bool = False) -> Callable[[list], list[int]]:
    """:func:`key_to_partition_fn` for a whole chunk of keys at once: a function from a list of
    keys to the list of their partitions (the default partitioner's memoized, see
    :class:`_MemoizedPartitions`)."""
    partition_of = key_to_partition_fn(partitioner, partition_count, distributed=distributed)
    if isinstance(partitioner, MurmurHashPartitioner):
        return _MemoizedPartitions(partition_of, partition_count)
    return lambda keys: list(map(partition_of, keys))
