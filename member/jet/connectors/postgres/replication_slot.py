"""A logical replication slot read through SQL: peek at its changes without consuming them,
advance its confirmed position once they are safe, and create it (and its publication).

The slot is read with ``pg_logical_slot_peek_binary_changes`` over an ordinary connection
(psycopg 3 has no replication protocol). A peek decodes from the slot's confirmed position
again each time and returns whole transactions; ``pg_replication_slot_advance`` moves the
confirmed position, after which the server may drop the WAL before it.
"""

from __future__ import annotations

from typing import Any, Sequence

from jet.connectors.postgres.connection import PostgresError, connect, describe, scrub
from jet.connectors.postgres.pgoutput import format_lsn, parse_lsn
from jet.connectors.postgres.table_writer import table_identifier

WHAT = "Sources.postgres_cdc"


def create_slot_and_publication(dsn: str, slot: str, publication: str, tables: Sequence[str] | None = None) -> None:
    """Create the publication (``FOR TABLE tables``, or ``FOR ALL TABLES``) and the ``pgoutput``
    slot unless they exist. Changes committed from then on are kept for the slot."""
    with connect(dsn, WHAT, autocommit=True) as connection:
        ensure_publication(connection, dsn, publication, tables)
        ensure_slot(connection, dsn, slot)


def ensure_publication(connection: Any, dsn: str, publication: str, tables: Sequence[str] | None) -> None:
    from psycopg import sql
    if _exists(connection, dsn, "SELECT 1 FROM pg_publication WHERE pubname = %s", publication):
        return
    target = (sql.SQL("FOR ALL TABLES") if tables is None else
              sql.SQL("FOR TABLE ") + sql.SQL(", ").join(map(table_identifier, tables)))
    _execute(connection, dsn, sql.SQL("CREATE PUBLICATION {} ").format(sql.Identifier(publication)) + target,
             f"creating publication {publication!r}")


def ensure_slot(connection: Any, dsn: str, slot: str) -> None:
    if _exists(connection, dsn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s AND database = current_database()",
               slot):
        return
    _execute(connection, dsn, "SELECT pg_create_logical_replication_slot(%s, 'pgoutput')",
             f"creating replication slot {slot!r}", (slot,))


def check_slot(connection: Any, dsn: str, slot: str, publication: str) -> int:
    """The slot's confirmed position; a clear error if the slot or publication is missing or the
    slot is not a ``pgoutput`` slot of this database."""
    row = _execute(connection, dsn, "SELECT plugin, confirmed_flush_lsn::text FROM pg_replication_slots "
                   "WHERE slot_name = %s AND database = current_database()", f"reading slot {slot!r}", (slot,)).fetchone()
    if row is None:
        raise PostgresError(f"{WHAT}: replication slot {slot!r} does not exist in {describe(dsn)}; create it "
                            f"(create_slot=True, or create_slot_and_publication)")
    if row[0] != "pgoutput":
        raise PostgresError(f"{WHAT}: replication slot {slot!r} in {describe(dsn)} uses plugin {row[0]!r}, "
                            "not 'pgoutput'")
    if not _exists(connection, dsn, "SELECT 1 FROM pg_publication WHERE pubname = %s", publication):
        raise PostgresError(f"{WHAT}: publication {publication!r} does not exist in {describe(dsn)}")
    return parse_lsn(row[1])


def peek(connection: Any, dsn: str, slot: str, publication: str, max_messages: int) -> list[bytes]:
    """The slot's pending messages from its confirmed position: whole transactions, stopping
    after the one that reaches ``max_messages``."""
    rows = _execute(connection, dsn, "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, %s, "
                    "'proto_version', '1', 'publication_names', %s)", f"reading replication slot {slot!r}",
                    (slot, max_messages, publication)).fetchall()
    return [row[0] for row in rows]


def advance(connection: Any, dsn: str, slot: str, lsn: int) -> None:
    """Move the slot's confirmed position to ``lsn`` (never back: a position at or before it is
    left as it is)."""
    confirmed = check_confirmed(connection, dsn, slot)
    if lsn > confirmed:
        _execute(connection, dsn, "SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                 f"advancing replication slot {slot!r}", (slot, format_lsn(lsn)))


def check_confirmed(connection: Any, dsn: str, slot: str) -> int:
    row = _execute(connection, dsn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                   f"reading slot {slot!r}", (slot,)).fetchone()
    if row is None:
        raise PostgresError(f"{WHAT}: replication slot {slot!r} is gone from {describe(dsn)}")
    return parse_lsn(row[0])


def _exists(connection: Any, dsn: str, query: str, name: str) -> bool:
    return _execute(connection, dsn, query, f"looking up {name!r}", (name,)).fetchone() is not None


def _execute(connection: Any, dsn: str, statement: Any, doing: str, params: Any = None) -> Any:
    import psycopg
    try:
        return connection.execute(statement, params)
    except psycopg.Error as error:
        raise PostgresError(f"{WHAT}: {doing} failed on {describe(dsn)}: {scrub(str(error).strip(), dsn)}") from None
