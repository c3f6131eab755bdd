"""What the Kafka source emits and how the Kafka sink turns items into bytes."""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class KafkaRecord(NamedTuple):
    """One consumed record, as ``Sources.kafka(..., record_fn=...)`` receives it."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: int
    """Epoch milliseconds (the record's CreateTime or LogAppendTime); -1 when it has none."""
    headers: list[tuple[str, bytes]] | None


def record_of(message: Any) -> KafkaRecord:
    """A :class:`KafkaRecord` from a ``confluent_kafka.Message``."""
    return KafkaRecord(message.key(), message.value(), message.topic(), message.partition(),
                       message.offset(), message.timestamp()[1], message.headers())


def to_bytes(value: Any) -> bytes | None:
    """The default serializer of keys and values: bytes as they are, str as UTF-8, None as
    None (a null value, a tombstone), anything else as compact JSON (tuples as arrays)."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(value, separators=(",", ":"), default=_json_default).encode("utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "_asdict"):
        return value._asdict()
    raise TypeError(f"Kafka sink: cannot serialize {type(value).__name__} {value!r} as JSON;"
                    f" give value_fn/key_fn returning bytes or str")
