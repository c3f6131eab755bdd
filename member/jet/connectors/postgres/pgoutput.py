"""A decoder of PostgreSQL's ``pgoutput`` logical replication messages, protocol version 1
(https://www.postgresql.org/docs/15/protocol-logicalrep-message-formats.html).

Each message is one ``bytea`` row of ``pg_logical_slot_peek_binary_changes(..., 'proto_version',
'1', 'publication_names', ...)``. Column values arrive as text and are turned into Python values
with psycopg's loaders for their type OIDs, the same values a query would give.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

POSTGRES_EPOCH_MS = 946_684_800_000
"""2000-01-01 in Unix epoch milliseconds: pgoutput's timestamps count microseconds from it."""

_INT16, _INT32, _INT64 = struct.Struct("!h"), struct.Struct("!i"), struct.Struct("!q")
_UINT32, _UINT64 = struct.Struct("!I"), struct.Struct("!Q")


class Begin(NamedTuple):
    final_lsn: int
    commit_time_ms: int
    xid: int


class Commit(NamedTuple):
    commit_lsn: int
    end_lsn: int
    commit_time_ms: int


class Change(NamedTuple):
    """A row change: ``operation`` is ``insert``, ``update``, ``delete`` or ``truncate``."""

    operation: str
    relation: "Relation"
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class Truncate(NamedTuple):
    relations: list["Relation"]


@dataclass
class Relation:
    """A table as a ``Relation`` message describes it."""

    oid: int
    schema: str
    name: str
    columns: list[tuple[str, int]] = field(default_factory=list)  # (name, type oid)
    key_columns: frozenset[str] = frozenset()


def format_lsn(lsn: int) -> str:
    """An LSN as PostgreSQL writes it: ``16/B374D848``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """``16/B374D848`` as an integer."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class PgOutputDecoder:
    """Decodes messages in order, remembering the relations described so far.

    ``load(type_oid, text_bytes)`` turns a column's text into a Python value."""

    def __init__(self, load: Callable[[int, bytes], Any]) -> None:
        self._load = load
        self.relations: dict[int, Relation] = {}

    def decode(self, message: bytes) -> Begin | Commit | Change | Truncate | Relation | None:
        """One message: a Begin, Commit, Change, Truncate or Relation; None for those a change
        stream does not need (origin, type, logical decoding message)."""
        kind = message[:1]
        if kind == b"B":
            final_lsn, commit_us, xid = _UINT64.unpack_from(message, 1)[0], _INT64.unpack_from(message, 9)[0], \
                _UINT32.unpack_from(message, 17)[0]
            return Begin(final_lsn, POSTGRES_EPOCH_MS + commit_us // 1000, xid)
        if kind == b"C":
            commit_lsn, end_lsn = _UINT64.unpack_from(message, 2)[0], _UINT64.unpack_from(message, 10)[0]
            return Commit(commit_lsn, end_lsn, POSTGRES_EPOCH_MS + _INT64.unpack_from(message, 18)[0] // 1000)
        if kind == b"R":
            return self._relation(message)
        if kind == b"I":
            relation = self._relation_of(message)
            assert message[5:6] == b"N", message[:6]
            after, _ = self._tuple(relation, message, 6)
            return Change("insert", relation, None, after)
        if kind == b"U":
            relation = self._relation_of(message)
            before, offset = None, 5
            if message[5:6] in (b"K", b"O"):
                before, offset = self._tuple(relation, message, 6, keys_only=message[5:6] == b"K")
            assert message[offset:offset + 1] == b"N", message[:offset + 1]
            after, _ = self._tuple(relation, message, offset + 1)
            return Change("update", relation, before, after)
        if kind == b"D":
            relation = self._relation_of(message)
            before, _ = self._tuple(relation, message, 6, keys_only=message[5:6] == b"K")
            return Change("delete", relation, before, None)
        if kind == b"T":
            count = _INT32.unpack_from(message, 1)[0]
            oids = [_UINT32.unpack_from(message, 6 + 4 * i)[0] for i in range(count)]
            return Truncate([self.relations[oid] for oid in oids])
        return None

    def _relation(self, message: bytes) -> Relation:
        oid = _UINT32.unpack_from(message, 1)[0]
        schema, offset = _string(message, 5)
        name, offset = _string(message, offset)
        offset += 1  # replica identity setting
        count = _INT16.unpack_from(message, offset)[0]
        offset += 2
        columns, keys = [], set()
        for _ in range(count):
            flags = message[offset]
            column, offset = _string(message, offset + 1)
            type_oid = _UINT32.unpack_from(message, offset)[0]
            offset += 8  # type oid, type modifier
            columns.append((column, type_oid))
            if flags & 1:
                keys.add(column)
        relation = Relation(oid, schema, name, columns, frozenset(keys))
        self.relations[oid] = relation
        return relation

    def _relation_of(self, message: bytes) -> Relation:
        oid = _UINT32.unpack_from(message, 1)[0]
        try:
            return self.relations[oid]
        except KeyError:
            raise ValueError(f"pgoutput: a change of relation {oid} came before its Relation message") from None

    def _tuple(self, relation: Relation, message: bytes, offset: int,
               keys_only: bool = False) -> tuple[dict[str, Any], int]:
        """The column values of TupleData at ``offset``; with ``keys_only`` (an old key tuple)
        only the replica identity's columns (the others are sent as NULL)."""
        count = _INT16.unpack_from(message, offset)[0]
        offset += 2
        values: dict[str, Any] = {}
        load = self._load
        for name, type_oid in relation.columns[:count]:
            kind = message[offset:offset + 1]
            offset += 1
            if kind == b"t":
                length = _INT32.unpack_from(message, offset)[0]
                offset += 4
                value: Any = load(type_oid, bytes(message[offset:offset + length]))
                offset += length
            elif kind == b"n":
                value = None
            elif kind == b"u":
                continue  # an unchanged TOASTed value is not sent: left out of the image
            else:
                raise ValueError(f"pgoutput: unknown column kind {kind!r} in relation {relation.name}")
            if not keys_only or name in relation.key_columns:
                values[name] = value
        return values, offset


def _string(message: bytes, offset: int) -> tuple[str, int]:
    end = message.index(b"\0", offset)
    return bytes(message[offset:end]).decode("utf-8"), end + 1
