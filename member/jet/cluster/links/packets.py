"""Frame types of the member-to-member stream, and the flow-control (ACK) frame codec.

Every frame on the stream starts with one :class:`FrameType` byte, so one bidirectional stream
per member pair carries the data packets of every edge and execution (CHUNK frames, see
:mod:`jet.cluster.edges.chunk_packets`) and the flow-control acks. Integers are big-endian.

ACK frame::

    u8 type=ACK | i32 numExecutions
    numExecutions x ( i64 executionId | i32 numEntries
                      numEntries x ( i32 destVertexId | i32 destOrdinal | i32 sendSeqLimitCompressed ) )

Malformed input raises :class:`PacketFormatError`; nothing here unpickles.
"""

from __future__ import annotations

import enum
import struct
from typing import Iterable, Mapping, NamedTuple, Sequence


class FrameType(enum.IntEnum):
    """The first byte of every frame on a member stream."""

    ACK = 2
    """Flow-control limits of every receiver of the sending member (receiver -> sender)."""
    CHUNK = 3
    """A data packet carrying one pickled chunk of items (see chunk_packets)."""
    DONE_REPORT = 4
    """A member's senders of one edge are done: frames sent to each member (see done_relay)."""
    DONE_NOTICE = 5
    """The relay member to a receiving member: frames each sender sent before it was done."""
    CONTROL_CALL = 6
    """A member's control call to another member (see stream_calls)."""
    CONTROL_REPLY = 7
    """The answer to a CONTROL_CALL."""
    SPARK_REQUEST = 16
    """A Spark task or driver to a member: rows, commit, abort, pull (see jet.connectors.spark)."""
    SPARK_REPLY = 17
    """A member to a Spark task or driver: flow-control limits, chunks, answers, errors."""


class PacketFormatError(ValueError):
    """A frame that is not a well-formed packet (truncated, garbage, wrong type)."""


class AckEntry(NamedTuple):
    """The flow-control limit of one receiver for the member the ack is sent to."""

    dest_vertex_id: int
    dest_ordinal: int
    send_seq_limit_compressed: int


_TYPE = struct.Struct(">B")
_COUNT = struct.Struct(">i")
_EXECUTION = struct.Struct(">qi")
_ACK_ENTRY = struct.Struct(">iii")


def frame_type(frame: bytes) -> FrameType:
    """The type of a frame, from its first byte."""
    if not frame:
        raise PacketFormatError("empty frame")
    try:
        return FrameType(frame[0])
    except ValueError:
        raise PacketFormatError(f"unknown frame type {frame[0]}") from None


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
    expect_frame_type(frame, FrameType.ACK)
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


def expect_frame_type(frame: bytes, expected: FrameType) -> None:
    """``PacketFormatError`` unless ``frame`` is of type ``expected``."""
    actual = frame_type(frame)
    if actual is not expected:
        raise PacketFormatError(f"expected a {expected.name} frame, got {actual.name}")
