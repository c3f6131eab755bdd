"""PostgreSQL two-phase commit as a :class:`~jet.connectors.transaction_pool.TransactionalResource`
(what Jet's XA JDBC sink does with XA): the sink writes in a transaction on its data connection,
``PREPARE TRANSACTION '<id>'`` in phase 1 makes it durable and detaches it from the connection,
``COMMIT PREPARED`` in phase 2, ``ROLLBACK PREPARED`` for the ids a restore finds in
``pg_prepared_xacts`` that the restored snapshot did not prepare.

``COMMIT PREPARED`` and ``ROLLBACK PREPARED`` cannot run inside a transaction block, and the data
connection may already be in the next transaction when phase 2 comes, so they go through a
second, autocommit *control* connection.
"""

from __future__ import annotations

import logging
from typing import Any

from jet.connectors.postgres.connection import PostgresConnectionError, PostgresError, describe, scrub

log = logging.getLogger("jet.connectors.postgres")

MAX_GID_BYTES = 200
"""PostgreSQL's limit on a prepared transaction's identifier (GIDSIZE)."""


class PreparedTransactions:
    """Begin / prepare / commit / abort of PostgreSQL transactions under the pool's ids."""

    def __init__(self, data: Any, control: Any, dsn: str, what: str) -> None:
        self._data, self._control, self._dsn, self._what = data, control, dsn, what
        self._active: str | None = None

    @property
    def active(self) -> str | None:
        """The id of the transaction open on the data connection, if any."""
        return self._active

    def use(self, data: Any, control: Any) -> None:
        """Go on with new connections (the old ones were lost, and the open transaction with them)."""
        self._data, self._control = data, control

    def begin(self, txn_id: str) -> None:
        if len(txn_id.encode()) > MAX_GID_BYTES:
            raise PostgresError(f"{self._what}: transaction id {txn_id!r} is longer than PostgreSQL's "
                                f"{MAX_GID_BYTES} bytes; use a shorter job or vertex name")
        self._run(self._data, "BEGIN")
        self._active = txn_id

    def prepare(self, txn_id: str) -> str:
        """``PREPARE TRANSACTION``; returns the transaction's xid, which the snapshot keeps."""
        from psycopg import sql
        xid = self._run(self._data, "SELECT pg_current_xact_id()::xid::text").fetchone()[0]
        self._run(self._data, sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(txn_id)))
        self._active = None
        return xid

    def commit(self, txn_id: str, prepared_state: Any) -> None:
        """``COMMIT PREPARED`` if the transaction prepared under ``txn_id`` is still the one the
        snapshot recorded (its xid); nothing if it was committed before (phase 2 ran before the
        job was lost).

        Another transaction under the same id was prepared after that snapshot, by a snapshot that
        never completed: the pool reuses a slot as soon as its transaction is committed (and
        after a failed snapshot), so an id alone does not say which snapshot prepared it. A
        restore from the older snapshot must not commit the newer rows (the sources replay
        them): that transaction is rolled back."""
        from psycopg import sql
        row = self._run(self._control, "SELECT transaction::text FROM pg_prepared_xacts "
                        "WHERE gid = %s AND database = current_database()", (txn_id,)).fetchone()
        if row is None:
            log.debug("%s: prepared transaction %s is already committed", self._what, txn_id)
            return
        if prepared_state is not None and row[0] != prepared_state:
            log.info("%s: %s holds transaction %s, prepared after the restored snapshot (which recorded "
                     "transaction %s); rolling it back (its items are replayed)", self._what, txn_id, row[0],
                     prepared_state)
            self._run(self._control, sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(txn_id)))
            return
        self._run(self._control, sql.SQL("COMMIT PREPARED {}").format(sql.Literal(txn_id)))

    def abort(self, txn_ids: list[str]) -> None:
        from psycopg import sql
        if self._active is not None and self._active in txn_ids:
            self._run(self._data, "ROLLBACK")
            self._active = None
        found = [gid for (gid,) in self._run(
            self._control, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND gid = ANY(%s)",
            (list(txn_ids),)).fetchall()]
        for gid in found:
            log.info("%s: rolling back prepared transaction %s, which no completed snapshot holds", self._what, gid)
            self._run(self._control, sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))

    def rollback_active(self) -> None:
        """Roll back the unprepared transaction on the data connection, if any (the job ends)."""
        if self._active is not None:
            self._active = None
            self._run(self._data, "ROLLBACK")

    def _run(self, connection: Any, statement: Any, params: Any = None) -> Any:
        import psycopg
        try:
            return connection.execute(statement, params)
        except psycopg.Error as error:
            doing = statement if isinstance(statement, str) else statement.as_string(None)
            kind = PostgresConnectionError if isinstance(error, psycopg.OperationalError) else PostgresError
            raise kind(f"{self._what}: {doing} failed on {describe(self._dsn)}: "
                       f"{scrub(str(error).strip(), self._dsn)}") from None
