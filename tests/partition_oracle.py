"""Where a key should land, computed from the documentation alone (docs/architecture.md,
Partitioning; the encoding is specified in ``jet.core.key_encoding``'s docstring) and never from
the engine's code: the tests compare the engine's placement with this oracle.

It encodes the common key types (None, bool, int, float, str, bytes, tuple, list, set,
frozenset, dict, date, naive datetime), hashes with ``mmh3`` directly and applies the ownership
rules: partition p belongs to member ``p % members``; on a distributed edge a member deals its
own partitions, in ascending order, round-robin to its processors; on a local edge processor
i owns the partitions ``p % LP == i``.
"""

from __future__ import annotations

import datetime
import struct
from typing import Any

import mmh3

SEED = 0x01000193
PARTITIONS = 271


def encode(key: Any) -> bytes:
    """The documented canonical encoding of ``key``."""
    if isinstance(key, str):
        return key.encode("utf-8", "surrogatepass")
    if key is None:
        return b"\x80"
    if isinstance(key, float) and key.is_integer():
        return encode(int(key))
    if isinstance(key, (bool, int)):
        if -(2 ** 63) <= key < 2 ** 63:
            return b"\x81" + struct.pack(">q", key)
        return b"\x82" + int(key).to_bytes((int(key).bit_length() + 8) // 8, "big", signed=True)
    if isinstance(key, float):
        return b"\x83" + struct.pack(">d", key)
    if isinstance(key, bytes):
        return b"\x86" + key
    if isinstance(key, tuple):
        return b"\x87" + _elements(encode(e) for e in key)
    if isinstance(key, list):
        return b"\x88" + _elements(encode(e) for e in key)
    if isinstance(key, (set, frozenset)):
        return b"\x89" + _elements(sorted(encode(e) for e in key))
    if isinstance(key, dict):
        pairs = sorted((encode(k), encode(v)) for k, v in key.items())
        return b"\x8a" + _elements(e for pair in pairs for e in pair)
    if isinstance(key, datetime.datetime) and key.tzinfo is None:
        micros = (key - datetime.datetime(1, 1, 1)) // datetime.timedelta(microseconds=1)
        return b"\x8d" + struct.pack(">q", micros)
    if isinstance(key, datetime.date) and not isinstance(key, datetime.datetime):
        return b"\x8f" + struct.pack(">q", key.toordinal())
    raise NotImplementedError(f"the oracle does not encode {type(key).__name__}")


def _elements(encodings) -> bytes:
    return b"".join(struct.pack(">I", len(e)) + e for e in encodings)


def partition_of(key: Any) -> int:
    """MurmurHash3 x86_32 of the encoding with the documented seed, ``abs(h) % 271``."""
    h = mmh3.hash(encode(key), SEED, signed=True)
    return 0 if h == -(2 ** 31) else abs(h) % PARTITIONS


def member_of(partition: int, members: int) -> int:
    """The member that owns ``partition``."""
    return partition % members


def processor_on_distributed_edge(partition: int, members: int, local_parallelism: int) -> tuple[int, int]:
    """(member, local processor) of ``partition`` on a distributed edge: the owner's partitions
    are m, m + members, m + 2 * members, ...; the k-th of them goes to processor k % LP."""
    return member_of(partition, members), (partition // members) % local_parallelism


def processor_on_local_edge(partition: int, local_parallelism: int) -> int:
    """The local processor of ``partition`` on a local edge."""
    return partition % local_parallelism
