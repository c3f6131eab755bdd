"""The frames Spark tasks and drivers exchange with members, on the members' own gRPC stream.

A Spark task (or driver) dials a member's gRPC server like a peer member, with the cluster
token and a negative member index of its own (:func:`new_peer_index`), and sends
``SPARK_REQUEST`` frames; the member answers with ``SPARK_REPLY`` frames on the same stream::

    u8 type | u32 header length | header (JSON, UTF-8) | payload (may be empty)

Rows always travel as Arrow: the header says ``"fmt": "arrow"`` and the payload is one Arrow
IPC stream (a schema and its record batches): a writer's ``rows`` (header ``row_type`` says how
the member turns them into items), a sink's ``chunk`` and ``fetch`` replies, and the reader's
Spark schema on its first ``pull`` and on every ``fetch`` (a stream with no batch). Other
payloads (a ``sample``'s items, from a member to a client) are pickle protocol 5. The header routes the frame
(``op``, ``job``, ``vertex``, ``proc`` = the processor's global index) without decoding the
payload on the network thread; the processor that owns it decodes it. Both ends authenticated
with the cluster token first.

Requests (``op``): ``probe`` (which processors of a vertex run here), ``rows`` (a chunk of one
Spark partition's rows from ``start``), ``flush`` (answered once every earlier frame of this
stream is queued), ``commit`` (final row count of every partition), ``abort`` (fail the
source with a reason), ``pull`` (credit for more chunks of a sink processor), ``sample`` (the
first items of a sink processor, for schema inference). Streams add ``end`` (a stream source's
Spark query ended: complete once every committed micro-batch is emitted), ``state`` (each
stream sink processor's appended and committed positions), ``fetch`` (a stream sink's items
in a range of positions) and ``trim`` (Spark committed them); a stream write's ``rows`` and
``commit`` carry the Spark query id and micro-batch id. Replies: ``ack`` (absolute
flow-control limit of a writer attempt), ``probe``, ``flushed``, ``ok``, ``chunk``,
``sample``, ``error``.
"""

from __future__ import annotations

import json
import pickle
import secrets
import struct
from typing import Any

from jet.cluster.links.packets import FrameType, PacketFormatError

PICKLE_PROTOCOL = 5
ARROW = "arrow"
"""The header's ``fmt`` of a frame whose payload is an Arrow IPC stream."""
_LENGTH = struct.Struct(">BI")
#: Arrow payloads start at a multiple of this in their frame (the header is padded), so batches
#: read in place have the alignment Arrow's compute kernels expect.
IPC_ALIGNMENT = 8

# request ops
PROBE, ROWS, FLUSH, COMMIT, ABORT, PULL, SAMPLE = "probe", "rows", "flush", "commit", "abort", "pull", "sample"
END, STATE, FETCH, TRIM = "end", "state", "fetch", "trim"
# reply ops
ACK, FLUSHED, OK, CHUNK, ERROR = "ack", "flushed", "ok", "chunk", "error"


def new_peer_index() -> int:
    """A fresh negative peer index for one task attempt or driver (random 40 bits, so two
    attempts, speculative twins or Spark applications never share one)."""
    return -(secrets.randbits(40) + 1)


def encode(kind: FrameType, header: dict[str, Any], payload: Any = None) -> bytes:
    """One frame; ``payload`` (anything picklable, usually a list) is pickled when not None."""
    return encode_sized(kind, header, payload)[0]


def encode_sized(kind: FrameType, header: dict[str, Any], payload: Any = None) -> tuple[bytes, int]:
    """:func:`encode`, and the payload's size (what flow control counts). The payload of an
    Arrow frame (``header["fmt"] == "arrow"``) is IPC bytes (any buffer) and is sent as is."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if header.get("fmt") == ARROW:
        body = memoryview(payload)
        head += b" " * (-(_LENGTH.size + len(head)) % IPC_ALIGNMENT)  # JSON allows trailing spaces
        return b"".join((_LENGTH.pack(kind, len(head)), head, body)), body.nbytes
    body = b"" if payload is None else pickle.dumps(payload, PICKLE_PROTOCOL)
    return _LENGTH.pack(kind, len(head)) + head + body, len(body)


def to_ipc(schema: Any, batches: Any = ()) -> Any:
    """One Arrow IPC stream: ``schema``, then ``batches`` (a ``pyarrow.Buffer``)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def decode_ipc(frame: bytes, offset: int) -> tuple[Any, list]:
    """The schema and record batches of an Arrow frame's payload, read without copying."""
    import pyarrow as pa

    buffer = pa.py_buffer(memoryview(frame)[offset:])
    if buffer.address % IPC_ALIGNMENT:  # Arrow's kernels warn about (and copy) misaligned buffers
        buffer = pa.py_buffer(bytes(buffer))
    reader = pa.ipc.open_stream(buffer)
    return reader.schema, list(reader)


def decode_items(header: dict[str, Any], frame: bytes, offset: int) -> Any:
    """The payload: a list of record batches for an Arrow frame, else unpickled."""
    if header.get("fmt") == ARROW:
        return decode_ipc(frame, offset)[1]
    return decode_payload(frame, offset)


def decode_header(frame: bytes) -> tuple[dict[str, Any], int]:
    """The header of a frame and the offset of its payload (nothing is unpickled)."""
    if len(frame) < _LENGTH.size:
        raise PacketFormatError(f"Spark frame of {len(frame)} bytes has no header")
    _, length = _LENGTH.unpack_from(frame)
    end = _LENGTH.size + length
    if end > len(frame):
        raise PacketFormatError(f"Spark frame header of {length} bytes does not fit in {len(frame)} bytes")
    try:
        header = json.loads(frame[_LENGTH.size:end])
    except ValueError as error:
        raise PacketFormatError(f"Spark frame header is not JSON: {error}") from error
    if not isinstance(header, dict) or not isinstance(header.get("op"), str):
        raise PacketFormatError("Spark frame header has no op")
    return header, end


def decode_payload(frame: bytes, offset: int) -> Any:
    """The unpickled payload (None when empty).

    SECURITY: unpickling runs code chosen by the sender; call it only on frames of a peer that
    authenticated with the cluster token (the transport refuses everyone else)."""
    if offset >= len(frame):
        return None
    return pickle.loads(memoryview(frame)[offset:])
