"""Writing batches of items into one table: ``COPY`` for plain inserts, ``INSERT ... ON CONFLICT
(key) DO UPDATE`` for upserts; items are dicts (looked up by column name) or tuples (by position)."""

from __future__ import annotations

from typing import Any, Sequence

from jet.connectors.postgres.connection import PostgresError, PostgresTableError, describe, statement_error


def table_identifier(table: str) -> Any:
    """``schema.table`` or ``table`` as a quoted SQL identifier."""
    from psycopg import sql
    parts = table.split(".")
    if not 1 <= len(parts) <= 2 or not all(parts):
        raise ValueError(f"Sinks.postgres: table must be 'table' or 'schema.table', got {table!r}")
    return sql.Identifier(*parts)


class TableWriter:
    """Writes rows into ``table`` on a connection; the caller owns the transaction."""

    def __init__(self, connection: Any, dsn: str, table: str, columns: Sequence[str] | None,
                 upsert_key: Sequence[str] | None) -> None:
        from psycopg import sql
        self._connection, self._dsn, self._table = connection, dsn, table
        self._subject = f"table {table!r}"
        existing = self._table_columns()
        self.columns = list(columns) if columns is not None else existing
        missing = [c for c in [*self.columns, *(upsert_key or ())] if c not in existing]
        if missing:
            raise PostgresTableError(f"Sinks.postgres: table {table!r} in {describe(dsn)} has no column(s) "
                                     f"{', '.join(map(repr, missing))}; it has {', '.join(existing)}")
        target = table_identifier(table)
        names = sql.SQL(", ").join(map(sql.Identifier, self.columns))
        self._upsert = upsert_key is not None
        if self._upsert:
            keys = list(upsert_key)
            updates = [c for c in self.columns if c not in keys]
            action = (sql.SQL("DO UPDATE SET ") + sql.SQL(", ").join(
                sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in updates)
                if updates else sql.SQL("DO NOTHING"))
            self._statement = sql.SQL("INSERT INTO {t} ({n}) VALUES ({v}) ON CONFLICT ({k}) {a}").format(
                t=target, n=names, v=sql.SQL(", ").join(sql.Placeholder() * len(self.columns)),
                k=sql.SQL(", ").join(map(sql.Identifier, keys)), a=action)
        else:
            self._statement = sql.SQL("COPY {t} ({n}) FROM STDIN").format(t=target, n=names)

    def use(self, connection: Any) -> None:
        """Write on ``connection`` from now on (the old one was lost)."""
        self._connection = connection

    def _table_columns(self) -> list[str]:
        import psycopg
        from psycopg import sql
        try:
            with self._connection.cursor() as cursor:
                cursor.execute(sql.SQL("SELECT * FROM {t} LIMIT 0").format(t=table_identifier(self._table)))
                columns = [column.name for column in cursor.description]
            if not self._connection.autocommit:
                self._connection.rollback()
            return columns
        except psycopg.Error as error:
            raise statement_error(error, "Sinks.postgres", self._subject, self._dsn) from None

    def rows(self, items: list) -> list[Sequence[Any]]:
        """The column values of each item (a dict by column name, a tuple or list by position)."""
        columns, width = self.columns, len(self.columns)
        rows = []
        for item in items:
            if isinstance(item, dict):
                try:
                    rows.append([item[c] for c in columns])
                except KeyError as error:
                    raise PostgresError(f"Sinks.postgres: an item has no key {error.args[0]!r} for a column of "
                                        f"table {self._table!r}: {_short(item)}") from None
            elif isinstance(item, (tuple, list)) and len(item) == width:
                rows.append(item)
            else:
                raise PostgresError(f"Sinks.postgres: an item must be a dict or a tuple of {width} values "
                                    f"({', '.join(columns)}) for table {self._table!r}, got {_short(item)}")
        return rows

    def write(self, items: list) -> None:
        """Write ``items`` in the connection's current transaction."""
        import psycopg
        rows = self.rows(items)
        try:
            with self._connection.cursor() as cursor:
                if self._upsert:
                    cursor.executemany(self._statement, rows)
                else:
                    with cursor.copy(self._statement) as copy:
                        for row in rows:
                            copy.write_row(row)
        except psycopg.Error as error:
            raise statement_error(error, "Sinks.postgres", self._subject, self._dsn) from None


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 200 else text[:197] + "..."
