"""Binary codec of the messages on the member-to-member stream (reference sections 7 and 8).

Every frame on the stream starts with one :class:`FrameType` byte, so one bidirectional stream per
member pair carries the data packets of every edge and execution and the flow-control acks. All
integers are big-endian (network order, as Jet writes them).

DATA frame::

    u8 type=DATA | i64 executionId | i32 destVertexId | i32 destOrdinal | i32 itemCount
    itemCount x ( u8 kind | kind=OBJECT: u32 size, size bytes of pickle protocol 5 | i32 partitionId )

``partitionId`` is -1 when the item has none; the DONE marker is an item of kind DONE (no payload,
partition -1) and is always the last item of the last packet of a sender.

ACK frame::

    u8 type=ACK | i32 numExecutions
    numExecutions x ( i64 executionId | i32 numEntries
                      numEntries x ( i32 destVertexId | i32 destOrdinal | i32 sendSeqLimitCompressed ) )

Decoding a data packet unpickles its items, which can run arbitrary code: call
:func:`decode_data_packet` only on frames from a peer that has authenticated (the transport rejects
everyone else before any handler sees a byte). Malformed input raises :class:`PacketFormatError`.
"""

from __future__ import annotations

import enum
import pickle
import struct
from collections import deque
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from jet.cluster.flow_control import item_footprint

PICKLE_PROTOCOL = 5
DEFAULT_PACKET_SIZE_LIMIT_BYTES = 16 * 1024
NO_PARTITION = -1


class FrameType(enum.IntEnum):
    """The first byte of every frame on a member stream."""

    DATA = 1
    """A data packet of one distributed edge (sender -> receiver)."""
    ACK = 2
    """Flow-control limits of every receiver of the sending member (receiver -> sender)."""
    CHUNK = 3
    """A data packet carrying one pickled chunk of items (see chunk_packets)."""
    SPARK_REQUEST = 16
    """A Spark task or driver to a member: rows, commit, abort, pull (see jet.connectors.spark)."""
    SPARK_REPLY = 17
    """A member to a Spark task or driver: flow-control limits, chunks, answers, errors."""


class ItemKind(enum.IntEnum):
    """The first byte of every item in a data packet; watermarks and barriers can be added here."""

    OBJECT = 0
    DONE = 1


class PacketFormatError(ValueError):
    """A frame that is not a well-formed packet (truncated, garbage, wrong type)."""


class DoneItem:
    """The DONE marker: the sender's input is exhausted. Use the singleton :data:`DONE_ITEM`."""

    _instance: "DoneItem | None" = None

    def __new__(cls) -> "DoneItem":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DONE_ITEM"


DONE_ITEM = DoneItem()


class DataPacketHeader(NamedTuple):
    """Where a data packet goes: the execution, the destination vertex and its inbound ordinal."""

    execution_id: int
    dest_vertex_id: int
    dest_ordinal: int


class BuiltPacket(NamedTuple):
    """A finished DATA frame, the footprints of its object items (in order), and whether it ends
    with DONE."""

    frame: bytes
    footprints: list[int]
    done: bool


class AckEntry(NamedTuple):
    """The flow-control limit of one receiver for the member the ack is sent to."""

    dest_vertex_id: int
    dest_ordinal: int
    send_seq_limit_compressed: int


_TYPE = struct.Struct(">B")
_DATA_HEADER = struct.Struct(">Bqiii")  # type, executionId, destVertexId, destOrdinal, itemCount
_OBJECT_START = struct.Struct(">BI")  # kind, size
_PARTITION = struct.Struct(">i")
_DONE = struct.Struct(">Bi").pack(ItemKind.DONE, NO_PARTITION)
_COUNT = struct.Struct(">i")
_EXECUTION = struct.Struct(">qi")
_ACK_ENTRY = struct.Struct(">iii")
_MIN_ITEM_BYTES = 1 + _PARTITION.size


class PacketBuilder:
    """Builds the DATA frames of one sender (one execution, destination vertex and ordinal).

    :meth:`build` takes items from the front of a pending deque while the frame is under
    ``packet_size_limit`` and the flow-control predicate allows; both are checked *before* each item,
    so the last item may overshoot the size limit.
    """

    def __init__(self, execution_id: int, dest_vertex_id: int, dest_ordinal: int,
                 packet_size_limit: int = DEFAULT_PACKET_SIZE_LIMIT_BYTES) -> None:
        if packet_size_limit <= 0:
            raise ValueError(f"packet_size_limit must be > 0 bytes, got {packet_size_limit!r}")
        self.header = DataPacketHeader(execution_id, dest_vertex_id, dest_ordinal)
        self.packet_size_limit = packet_size_limit
        _DATA_HEADER.pack(FrameType.DATA, execution_id, dest_vertex_id, dest_ordinal, 0)  # range check

    def build(self, pending: deque, may_send: Callable[[int], bool] | None = None) -> BuiltPacket | None:
        """Move items from ``pending`` into one DATA frame; ``None`` when no item could be taken.

        ``pending`` holds ``(item, partition_id)`` pairs; an item that is :data:`DONE_ITEM` writes the
        DONE marker and ends the packet. ``may_send(footprint_bytes_so_far)`` is asked before each
        item with the footprint already put into this packet (the sender checks its
        :class:`~jet.cluster.flow_control.SendLimit` against ``sent_seq + footprint_bytes_so_far``).
        """
        parts: list[bytes] = [b""]
        footprints: list[int] = []
        size = _DATA_HEADER.size
        added = 0
        count = 0
        done = False
        dumps, pack_start, pack_partition = pickle.dumps, _OBJECT_START.pack, _PARTITION.pack
        while pending and size < self.packet_size_limit and (may_send is None or may_send(added)):
            item, partition_id = pending.popleft()
            count += 1
            if item is DONE_ITEM:
                parts.append(_DONE)
                done = True
                break
            blob = dumps(item, PICKLE_PROTOCOL)
            parts += (pack_start(ItemKind.OBJECT, len(blob)), blob, pack_partition(partition_id))
            size += len(blob) + 9
            footprint = item_footprint(len(blob))
            footprints.append(footprint)
            added += footprint
        if count == 0:
            return None
        parts[0] = _DATA_HEADER.pack(FrameType.DATA, *self.header, count)
        return BuiltPacket(b"".join(parts), footprints, done)


def frame_type(frame: bytes) -> FrameType:
    """The type of a frame, from its first byte."""
    if not frame:
        raise PacketFormatError("empty frame")
    try:
        return FrameType(frame[0])
    except ValueError:
        raise PacketFormatError(f"unknown frame type {frame[0]}") from None


def decode_data_header(frame: bytes) -> DataPacketHeader:
    """The routing header of a DATA frame, without unpickling anything (for the network thread)."""
    _expect_type(frame, FrameType.DATA)
    if len(frame) < _DATA_HEADER.size:
        raise PacketFormatError(f"DATA frame of {len(frame)} bytes is shorter than its "
                                f"{_DATA_HEADER.size}-byte header")
    _, execution_id, vertex_id, ordinal, _ = _DATA_HEADER.unpack_from(frame)
    return DataPacketHeader(execution_id, vertex_id, ordinal)


def decode_data_packet(frame: bytes, footprints: list[int] | None = None
                       ) -> tuple[DataPacketHeader, list[tuple[Any, int]], bool]:
    """Decode a DATA frame into ``(header, [(item, partition_id), ...], done)``.

    SECURITY: this unpickles the items, i.e. may execute code chosen by whoever wrote the frame.
    Call it only on frames received from an authenticated peer of this cluster.

    When ``footprints`` is given, the footprint of each returned item is appended to it (the
    receiver acks these). The DONE marker is not returned as an item; it sets ``done``.
    """
    header = decode_data_header(frame)
    view = memoryview(frame)
    end = len(frame)
    count = _DATA_HEADER.unpack_from(frame)[4]
    if count < 0 or count * _MIN_ITEM_BYTES > end - _DATA_HEADER.size:
        raise PacketFormatError(f"DATA frame claims {count} items but has only "
                                f"{end - _DATA_HEADER.size} bytes of items")
    offset = _DATA_HEADER.size
    items: list[tuple[Any, int]] = []
    done = False
    loads, unpack_start, unpack_partition = pickle.loads, _OBJECT_START.unpack_from, _PARTITION.unpack_from
    for index in range(count):
        if done:
            raise PacketFormatError(f"item {index} follows the DONE marker")
        kind = frame[offset] if offset < end else None
        if kind == ItemKind.OBJECT and offset + 5 <= end:
            size = unpack_start(frame, offset)[1]
            start = offset + 5
            offset = start + size
            if offset + 4 > end:
                raise PacketFormatError(f"item {index} of {size} bytes runs past the end of the frame")
            try:
                item = loads(view[start:offset])
            except Exception as e:  # unpickling garbage can raise almost anything
                raise PacketFormatError(f"item {index} does not unpickle: {type(e).__name__}: {e}") from e
            items.append((item, unpack_partition(frame, offset)[0]))
            if footprints is not None:
                footprints.append(item_footprint(size))
            offset += 4
        elif kind == ItemKind.DONE and offset + 5 <= end:
            done = True
            offset += 5
        else:
            raise PacketFormatError(f"item {index} at byte {offset}: bad kind {kind!r} or truncated")
    if offset != end:
        raise PacketFormatError(f"{end - offset} trailing bytes after {count} items")
    return header, items, done


def encode_ack_packet(acks: Mapping[int, Iterable[AckEntry | Sequence[int]]]) -> bytes:
    """An ACK frame from ``{execution_id: [(dest_vertex_id, dest_ordinal, limit_compressed), ...]}``."""
    parts = [_TYPE.pack(FrameType.ACK), _COUNT.pack(len(acks))]
    for execution_id, entries in acks.items():
        entries = list(entries)
        parts.append(_EXECUTION.pack(execution_id, len(entries)))
        parts.extend(_ACK_ENTRY.pack(*entry) for entry in entries)
    return b"".join(parts)


def decode_ack_packet(frame: bytes) -> dict[int, list[AckEntry]]:
    """Decode an ACK frame into ``{execution_id: [AckEntry, ...]}`` (nothing is unpickled)."""
    _expect_type(frame, FrameType.ACK)
    try:
        (num_executions,) = _COUNT.unpack_from(frame, 1)
        offset = 1 + _COUNT.size
        if num_executions < 0 or num_executions * _EXECUTION.size > len(frame) - offset:
            raise PacketFormatError(f"ACK frame claims {num_executions} executions in {len(frame)} bytes")
        acks: dict[int, list[AckEntry]] = {}
        for _ in range(num_executions):
            execution_id, num_entries = _EXECUTION.unpack_from(frame, offset)
            offset += _EXECUTION.size
            if num_entries < 0 or num_entries * _ACK_ENTRY.size > len(frame) - offset:
                raise PacketFormatError(f"execution {execution_id} claims {num_entries} entries "
                                        f"with {len(frame) - offset} bytes left")
            acks[execution_id] = [AckEntry(*_ACK_ENTRY.unpack_from(frame, offset + i * _ACK_ENTRY.size))
                                  for i in range(num_entries)]
            offset += num_entries * _ACK_ENTRY.size
    except struct.error as e:
        raise PacketFormatError(f"truncated ACK frame of {len(frame)} bytes: {e}") from e
    if offset != len(frame):
        raise PacketFormatError(f"{len(frame) - offset} trailing bytes in ACK frame")
    return acks


def _expect_type(frame: bytes, expected: FrameType) -> None:
    actual = frame_type(frame)
    if actual is not expected:
        raise PacketFormatError(f"expected a {expected.name} frame, got {actual.name}")
