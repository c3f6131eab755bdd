"""The control messages of the cluster: their names and their encoding.

A control payload is ``u32 header length | JSON header | blob``. The header is plain JSON, so a
reply can be read without unpickling anything (a client does not unpickle what a member says);
the blob carries the cloudpickled DAG of ``submit`` and ``init`` (unpickled by a member only after
the transport authenticated the caller), the named results of a job (``execution_done`` from a
member, ``job_results`` to a client that asks for them) and an observable's items
(``observable_items`` from a member, ``observable_read`` to a client).
"""

from __future__ import annotations

import json
import struct
from typing import Any, Iterable

from jet.cluster.links.packets import PacketFormatError

# Client -> coordinator (member 0).
SUBMIT = "submit"
JOB_STATUS = "job_status"
JOB_WAIT = "job_wait"
CANCEL_JOB = "cancel_job"
JOB_METRICS = "job_metrics"
JOB_RESULTS = "job_results"
OBSERVABLE_READ = "observable_read"
JOB_CONTROL = "job_control"
"""suspend, resume, restart, export_snapshot or cancel_and_export of a job (``action``)."""
LIST_JOBS = "list_jobs"
LIST_SNAPSHOTS = "list_snapshots"
DELETE_SNAPSHOT = "delete_snapshot"
PING = "ping"
READY_WAIT_SLICE_S = 1.0
"""How long one readiness ping (``wait_s``) may be held before its caller looks again (at its
deadline, its stop, the member processes)."""
# Coordinator -> every member.
INIT = "init"
CANCEL = "cancel"
COMPLETE = "complete"
EXECUTION_METRICS = "execution_metrics"
EXECUTION_STATE = "execution_state"
SNAPSHOT_PHASE1 = "snapshot_phase1"
SNAPSHOT_PHASE2 = "snapshot_phase2"
# Member -> coordinator.
EXECUTION_DONE = "execution_done"
OBSERVABLE_ITEMS = "observable_items"
# Member -> every other member.
LEAVING = "leaving"

#: The index a client presents in its call metadata: negative, as every client's (a member's
#: index is >= 0 and needs the member key's proof).
CLIENT_INDEX = -1

_LENGTH = struct.Struct(">I")


def encode_message(header: dict[str, Any], blob: bytes = b"") -> bytes:
    """One control payload: a JSON ``header`` and an optional binary ``blob``."""
    data = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return _LENGTH.pack(len(data)) + data + blob


def encode_message_per_value(header: dict[str, Any], blob: bytes, key: str,
                             values: Iterable[Any]) -> dict[Any, bytes]:
    """``encode_message({**header, key: value}, blob)`` for each of ``values``, encoding the
    rest of the header once: the coordinator sends every member the same plan but its index, and
    JSON-encoding the whole plan (its partition table among it) per member was a cost per member
    per job."""
    rest = {name: value for name, value in header.items() if name != key}
    common = json.dumps(rest, separators=(",", ":"))
    head = common[:-1] + ("," if rest else "") + json.dumps(key) + ":"
    result = {}
    for value in values:
        data = (head + json.dumps(value, separators=(",", ":")) + "}").encode("utf-8")
        result[value] = _LENGTH.pack(len(data)) + data + blob
    return result


def decode_message(payload: bytes) -> tuple[dict[str, Any], bytes]:
    """Inverse of :func:`encode_message`; raises :class:`PacketFormatError` when malformed."""
    if len(payload) < _LENGTH.size:
        raise PacketFormatError(f"control payload of {len(payload)} bytes has no header length")
    (length,) = _LENGTH.unpack_from(payload)
    end = _LENGTH.size + length
    if end > len(payload):
        raise PacketFormatError(f"control header of {length} bytes does not fit in {len(payload)} bytes")
    try:
        header = json.loads(payload[_LENGTH.size:end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PacketFormatError(f"control header is not JSON: {e}") from e
    if not isinstance(header, dict):
        raise PacketFormatError(f"control header must be a JSON object, got {type(header).__name__}")
    return header, payload[end:]


def describe_call_error(error: BaseException, timeout_s: float) -> str:
    """A failed control call's error text; a wait that ran out says so with its bound."""
    if isinstance(error, TimeoutError) and not str(error):
        return f"no answer within {timeout_s} s"
    return str(error)


def require(header: dict[str, Any], field: str, kind: type | tuple[type, ...]) -> Any:
    """``header[field]``, checked to be of ``kind``; the error names the field and the value."""
    value = header.get(field)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise PacketFormatError(f"control header field {field!r} must be {getattr(kind, '__name__', kind)}, "
                                f"got {value!r}")
    return value
