"""``Sources.postgres``: the rows of a query, read through a server-side cursor in chunks.

With a partition column every source processor of the cluster reads one range of it (see
:mod:`jet.connectors.postgres.ranges`); each processor first asks the server for the column's
minimum and maximum over the query, so they all compute the same ranges. Without one, the
processor with global index 0 reads everything. Each processor reads in a transaction of its
own (``REPEATABLE READ``, read only): its rows are one consistent view, but two processors may
start a moment apart.

A batch source keeps no position: a job restarted from a snapshot reads the query again.
"""

from __future__ import annotations

from typing import Any, Iterator

from jet.connectors.postgres.connection import PostgresError, connect, statement_error
from jet.connectors.postgres.ranges import ValueRange, processor_range
from jet.core.processors import BlockSourceP

DEFAULT_FETCH_ROWS = 1024
"""Rows per fetch from the server-side cursor, and per chunk emitted."""


class QuerySourceP(BlockSourceP):
    """Emits its share of a query's rows, as dicts or tuples, one fetch per call.

    Not cooperative: a fetch waits for the server (bounded by the statement timeout)."""

    is_cooperative = False

    def __init__(self, dsn: str, query: str, partition_column: str | None, as_tuples: bool,
                 fetch_rows: int, statement_timeout_ms: int) -> None:
        self._dsn, self._query, self._column = dsn, query, partition_column
        self._as_tuples, self._fetch_rows = as_tuples, fetch_rows
        self._statement_timeout_ms = statement_timeout_ms

    def blocks(self) -> Iterator[list]:
        context = self.context
        if self._column is None and context.global_index != 0:
            return
        import psycopg
        from psycopg.rows import dict_row, tuple_row
        what = "Sources.postgres"
        with connect(self._dsn, what, statement_timeout_ms=self._statement_timeout_ms,
                     application_name=f"jet {context.vertex_name}#{context.global_index}") as connection:
            connection.read_only = True
            connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            try:
                statement = self._statement(connection, context.global_index, context.total_parallelism)
                with connection.cursor(name=f"jet_source_{context.global_index}",
                                       row_factory=tuple_row if self._as_tuples else dict_row) as cursor:
                    cursor.execute(statement)
                    while rows := cursor.fetchmany(self._fetch_rows):
                        yield rows
            except psycopg.Error as error:
                raise _query_error(error, self._query, self._dsn) from None
            connection.rollback()  # read only: nothing to keep

    def _statement(self, connection: Any, index: int, count: int) -> Any:
        """The query, or its range of processor ``index`` of ``count`` (bounds as literals, so a
        ``%`` in the user's query is never taken for a placeholder)."""
        from psycopg import sql
        if self._column is None:
            return sql.SQL(self._query)
        inner, column = sql.SQL(self._query), sql.Identifier(self._column)
        minimum, maximum = connection.execute(
            sql.SQL("SELECT min(q.{c}), max(q.{c}) FROM ({q}) AS q").format(c=column, q=inner)).fetchone()
        try:
            share: ValueRange = processor_range(minimum, maximum, index, count)
        except TypeError as error:
            raise PostgresError(f"Sources.postgres: partition column {self._column!r}: {error}") from None
        conditions = []
        if share.low is not None:
            conditions.append(sql.SQL("(q.{c} >= {low} AND q.{c} {op} {high})").format(
                c=column, low=sql.Literal(share.low), high=sql.Literal(share.high),
                op=sql.SQL("<=" if share.includes_high else "<")))
        if share.includes_nulls:
            conditions.append(sql.SQL("q.{c} IS NULL").format(c=column))
        if not conditions:
            conditions.append(sql.SQL("FALSE"))
        return sql.SQL("SELECT * FROM ({q}) AS q WHERE {w}").format(q=inner, w=sql.SQL(" OR ").join(conditions))


def _query_error(error: Exception, query: str, dsn: str) -> PostgresError:
    short = " ".join(query.split())
    return statement_error(error, "Sources.postgres", f"the query {short[:117] + '...' if len(short) > 120 else short!r}",
                           dsn)
