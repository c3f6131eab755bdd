"""The chunk packet: how a distributed edge carries a chunk of items in one frame.

Pickling item by item costs a Python call per item on both sides, which caps an edge far
below what the local engine moves; so a packet carries one pickle of a whole list of items
(or of (item, partition id) pairs, so a receiver with several processors does not hash again)::

    u8 type=CHUNK | i64 executionId | i32 destVertexId | i32 destOrdinal | u8 flags | i32 count
    the ``count`` entries in the column form of :mod:`jet.core.item_columns`
    (one pickle, protocol 5; absent when count is 0)

flags: bit 0 DONE (the sender's last packet), bit 1 entries are (item, partition id) pairs,
bit 2 WATERMARK: count is 0 and the payload is the coalesced watermark of the sender's local
upstream processors, one big-endian int64 (``MAX_TIMESTAMP`` = IDLE), not pickled;
bit 3 BARRIER: count is 0 and the payload is the snapshot id of a barrier every local upstream
processor delivered, one big-endian int64; bit 4 TERMINAL with it: the barrier is terminal.
The footprint of a packet for flow control is its pickle size + 56 bytes per item, the same
total Jet's per-item footprints add up to; sender and receiver both use
:func:`chunk_footprint`, and a watermark counts as one item of 8 bytes
(:data:`WATERMARK_FOOTPRINT`) on both sides.
"""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import Any, NamedTuple

from jet.core.item_columns import pack_items, unpack_items
from jet.cluster.edges.flow_control import ITEM_FOOTPRINT_OVERHEAD_BYTES
from jet.cluster.links.packets import FrameType, PacketFormatError

FLAG_DONE = 1
FLAG_PAIRS = 2
FLAG_WATERMARK = 4
FLAG_BARRIER = 8
FLAG_TERMINAL = 16
_ALL_FLAGS = FLAG_DONE | FLAG_PAIRS | FLAG_WATERMARK | FLAG_BARRIER | FLAG_TERMINAL
_SPECIAL = FLAG_WATERMARK | FLAG_BARRIER
_HEADER = struct.Struct(">BqiiBi")  # type, executionId, destVertexId, destOrdinal, flags, count
HEADER_BYTES = _HEADER.size
_FLAGS_OFFSET = struct.calcsize(">Bqii")
_TIMESTAMP = struct.Struct(">q")
_first, _second = itemgetter(0), itemgetter(1)


class ChunkHeader(NamedTuple):
    execution_id: int
    dest_vertex_id: int
    dest_ordinal: int
    flags: int
    count: int


def chunk_footprint(pickled_bytes: int, count: int) -> int:
    """Flow-control footprint of ``count`` items that pickle to ``pickled_bytes``."""
    return pickled_bytes + ITEM_FOOTPRINT_OVERHEAD_BYTES * count


#: Flow-control footprint of a watermark packet (one item of 8 bytes), on both sides.
WATERMARK_FOOTPRINT = _TIMESTAMP.size + ITEM_FOOTPRINT_OVERHEAD_BYTES


def encode_chunk(execution_id: int, dest_vertex_id: int, dest_ordinal: int, entries: list,
                 *, pairs: bool = False, done: bool = False) -> bytes:
    """One CHUNK frame carrying ``entries`` (items, or (item, partition) pairs)."""
    flags = (FLAG_DONE if done else 0) | (FLAG_PAIRS if pairs else 0)
    header = _HEADER.pack(FrameType.CHUNK, execution_id, dest_vertex_id, dest_ordinal, flags,
                          len(entries))
    if not entries:
        return header
    if pairs:
        return header + pack_items(list(map(_first, entries)), list(map(_second, entries)))
    return header + pack_items(entries)


def mark_done(frame: bytes) -> bytes:
    """The same CHUNK frame of items with its DONE flag set (it is its sender's last)."""
    return frame[:_FLAGS_OFFSET] + bytes((frame[_FLAGS_OFFSET] | FLAG_DONE,)) + frame[_FLAGS_OFFSET + 1:]


def encode_watermark(execution_id: int, dest_vertex_id: int, dest_ordinal: int,
                     timestamp: int) -> bytes:
    """One CHUNK frame carrying a watermark's timestamp (``MAX_TIMESTAMP`` for IDLE)."""
    return _HEADER.pack(FrameType.CHUNK, execution_id, dest_vertex_id, dest_ordinal,
                        FLAG_WATERMARK, 0) + _TIMESTAMP.pack(timestamp)


def encode_barrier(execution_id: int, dest_vertex_id: int, dest_ordinal: int,
                   snapshot_id: int, terminal: bool) -> bytes:
    """One CHUNK frame carrying a snapshot barrier."""
    flags = FLAG_BARRIER | (FLAG_TERMINAL if terminal else 0)
    return _HEADER.pack(FrameType.CHUNK, execution_id, dest_vertex_id, dest_ordinal,
                        flags, 0) + _TIMESTAMP.pack(snapshot_id)


def decode_chunk_header(frame: bytes) -> ChunkHeader:
    """The routing header, without unpickling anything (safe on the network thread)."""
    if len(frame) < HEADER_BYTES:
        raise PacketFormatError(f"CHUNK frame of {len(frame)} bytes is shorter than its"
                                f" {HEADER_BYTES}-byte header")
    kind, execution_id, vertex_id, ordinal, flags, count = _HEADER.unpack_from(frame)
    if kind != FrameType.CHUNK:
        raise PacketFormatError(f"expected a CHUNK frame, got type {kind}")
    special = flags & _SPECIAL
    if count < 0 or flags & ~_ALL_FLAGS or (special and (count or flags & FLAG_DONE)) or (
            special == _SPECIAL) or (flags & FLAG_TERMINAL and not flags & FLAG_BARRIER):
        raise PacketFormatError(f"CHUNK frame with count {count} and flags {flags:#x}")
    return ChunkHeader(execution_id, vertex_id, ordinal, flags, count)


def decode_chunk(frame: bytes) -> tuple[ChunkHeader, list[Any]]:
    """Decode a CHUNK frame into its header and entries (items, or (item, partition) pairs).

    SECURITY: this unpickles, i.e. may run code chosen by whoever wrote the frame. Call it only
    on frames from a peer that authenticated with the cluster token.
    """
    header, items, partitions = decode_chunk_columns(frame)
    return header, items if partitions is None else list(zip(items, partitions))


def decode_chunk_columns(frame: bytes) -> tuple[ChunkHeader, list[Any], Any]:
    """Decode a CHUNK frame into its header, its items and their partition ids (None when the
    frame carries none).

    SECURITY: this unpickles, as :func:`decode_chunk` does.
    """
    header = decode_chunk_header(frame)
    if header.flags & _SPECIAL:
        watermark_timestamp(frame)  # validates the payload
        return header, [], None
    if header.count == 0:
        if len(frame) != HEADER_BYTES:
            raise PacketFormatError("an empty CHUNK frame has trailing bytes")
        return header, [], None
    try:
        items, partitions = unpack_items(memoryview(frame)[HEADER_BYTES:])
    except Exception as error:  # garbage can make pickle raise almost anything
        raise PacketFormatError(f"CHUNK payload does not unpickle: {type(error).__name__}: {error}") from error
    if len(items) != header.count or (partitions is None) == bool(header.flags & FLAG_PAIRS):
        raise PacketFormatError(f"CHUNK payload is not {header.count} "
                                f"{'(item, partition) pairs' if header.flags & FLAG_PAIRS else 'items'}")
    return header, items, partitions


def watermark_timestamp(frame: bytes) -> int:
    """The int64 a WATERMARK chunk frame carries (a BARRIER frame: the snapshot id)."""
    if len(frame) != HEADER_BYTES + _TIMESTAMP.size:
        raise PacketFormatError(f"a WATERMARK or BARRIER CHUNK frame has {len(frame) - HEADER_BYTES}"
                                f" payload bytes, expected {_TIMESTAMP.size}")
    return _TIMESTAMP.unpack_from(frame, HEADER_BYTES)[0]


def payload_bytes(frame: bytes) -> int:
    """Pickled size of a CHUNK frame's entries."""
    return len(frame) - HEADER_BYTES
