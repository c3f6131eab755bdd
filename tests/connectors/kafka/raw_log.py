"""What a ``read_committed`` reader should see, computed from a partition's raw log.

tansu 0.6.0 writes transaction markers (control batches) into the log but gives consumers no
aborted-transaction index, so librdkafka's ``read_committed`` returns aborted records too. This
module fetches the raw record batches itself (Fetch v4, uncompressed batches of magic 2) and
applies Kafka's rule: a transactional batch counts once a COMMIT marker of its producer follows
it, and never after an ABORT; a non-transactional batch counts at once.
"""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

_FETCH, _FETCH_VERSION = 1, 4
_ATTR_TRANSACTIONAL, _ATTR_CONTROL = 0x10, 0x20
_COMMIT = 1


class LogRecord(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None


class PartitionLog(NamedTuple):
    committed: list[LogRecord]
    aborted: list[LogRecord]
    open: list[LogRecord]  # transactional records with no marker yet
    commit_markers: int
    abort_markers: int


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _bytes_field(data: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _varint(data, pos)
    if length < 0:
        return None, pos
    return data[pos:pos + length], pos + length


def _string(value: str) -> bytes:
    encoded = value.encode()
    return struct.pack(">h", len(encoded)) + encoded


class _Connection:
    def __init__(self, servers: str) -> None:
        host, port = servers.split(",")[0].rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=10)
        self._correlation = 0

    def fetch(self, topic: str, partition: int, offset: int) -> tuple[int, bytes]:
        self._correlation += 1
        body = (struct.pack(">hhi", _FETCH, _FETCH_VERSION, self._correlation) + _string("raw-log")
                + struct.pack(">iiiib", -1, 100, 1, 16 << 20, 0) + struct.pack(">i", 1) + _string(topic)
                + struct.pack(">iiqi", 1, partition, offset, 16 << 20))
        self._sock.sendall(struct.pack(">i", len(body)) + body)
        data = self._read(struct.unpack(">i", self._read(4))[0])
        pos = 8  # correlation id, throttle time
        (topics,) = struct.unpack_from(">i", data, pos)
        pos += 4
        assert topics == 1
        (name_length,) = struct.unpack_from(">h", data, pos)
        pos += 2 + name_length + 4  # name, partitions count (1)
        _, error, high_watermark, _ = struct.unpack_from(">ihqq", data, pos)
        pos += 22
        if error:
            raise RuntimeError(f"fetch of {topic}/{partition} failed with error code {error}")
        (aborted_count,) = struct.unpack_from(">i", data, pos)
        pos += 4 + max(aborted_count, 0) * 16
        (records_length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        return high_watermark, data[pos:pos + max(records_length, 0)]

    def _read(self, count: int) -> bytes:
        chunks = []
        while count:
            chunk = self._sock.recv(count)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._sock.close()


def _batches(records: bytes):
    """(base offset, last offset, attributes, producer id, [(offset, key, value)]) per whole batch."""
    pos = 0
    while pos + 61 <= len(records):
        base_offset, batch_length = struct.unpack_from(">qi", records, pos)
        end = pos + 12 + batch_length
        if end > len(records):
            return  # a partial batch at the end of the response
        attributes, last_delta = struct.unpack_from(">hi", records, pos + 21)
        producer_id, = struct.unpack_from(">q", records, pos + 43)
        if attributes & 0x07:
            raise ValueError("compressed batches are not supported here")
        (count,) = struct.unpack_from(">i", records, pos + 57)
        rpos, items = pos + 61, []
        for _ in range(count):
            _, rpos = _varint(records, rpos)  # length
            rpos += 1  # attributes
            _, rpos = _varint(records, rpos)  # timestamp delta
            offset_delta, rpos = _varint(records, rpos)
            key, rpos = _bytes_field(records, rpos)
            value, rpos = _bytes_field(records, rpos)
            headers, rpos = _varint(records, rpos)
            for _ in range(headers):
                _, rpos = _bytes_field(records, rpos)
                _, rpos = _bytes_field(records, rpos)
            items.append(LogRecord(base_offset + offset_delta, key, value))
        yield base_offset, base_offset + last_delta, attributes, producer_id, items
        pos = end


def read_partition(servers: str, topic: str, partition: int) -> PartitionLog:
    """Every record of the partition up to its high watermark, sorted by what its transaction did."""
    connection = _Connection(servers)
    committed, aborted, pending = [], [], {}
    markers = [0, 0]
    try:
        offset, high_watermark = 0, None
        while high_watermark is None or offset < high_watermark:
            high_watermark, records = connection.fetch(topic, partition, offset)
            progressed = False
            for _, last_offset, attributes, producer_id, items in _batches(records):
                offset, progressed = last_offset + 1, True
                if attributes & _ATTR_CONTROL:
                    marker_type = struct.unpack_from(">hh", items[0].key)[1] if items and items[0].key else 0
                    markers[marker_type == _COMMIT] += 1
                    (committed if marker_type == _COMMIT else aborted).extend(pending.pop(producer_id, []))
                elif attributes & _ATTR_TRANSACTIONAL:
                    pending.setdefault(producer_id, []).extend(items)
                else:
                    committed.extend(items)
            if not progressed:
                break
    finally:
        connection.close()
    return PartitionLog(committed, aborted, [r for records in pending.values() for r in records],
                        markers[1], markers[0])
