"""The descriptors behind ``Sources.postgres``, ``Sinks.postgres`` and ``Sources.postgres_cdc``:
arguments checked (each error names the factory and the argument), then a picklable supplier."""

from __future__ import annotations

from typing import Callable, Sequence

from jet.pipeline.source_sink import Sink, Source, StreamSource
from jet.connectors.postgres.cdc_source import DEFAULT_POLL_INTERVAL_MS, PostgresCdcP
from jet.connectors.postgres.connection import STATEMENT_TIMEOUT_MS, describe
from jet.connectors.postgres.query_source import DEFAULT_FETCH_ROWS, QuerySourceP
from jet.connectors.postgres.sink import DEFAULT_BATCH_ROWS, PostgresSinkP
from jet.core.event_time import EventTimePolicy
from jet.core.processor import Processor


def postgres_source(dsn: str, query: str, partition_column: str | None = None, *, as_tuples: bool = False,
                    fetch_rows: int = DEFAULT_FETCH_ROWS, statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
                    name: str | None = None) -> Source:
    """``Sources.postgres``: a batch source of the query's rows (one processor per member)."""
    what = "Sources.postgres"
    where = _where(dsn, what)
    _non_empty_str(query, what, "query")
    if partition_column is not None:
        _non_empty_str(partition_column, what, "partition_column")
    _positive_int(fetch_rows, what, "fetch_rows")
    _positive_int(statement_timeout_ms, what, "statement_timeout_ms")
    return Source(name or f"postgres({where})",
                  lambda: QuerySourceP(dsn, query, partition_column, as_tuples, fetch_rows, statement_timeout_ms), 1)


def postgres_sink(dsn: str, table: str, columns: Sequence[str] | None = None, upsert_key: str | Sequence[str] | None = None,
                  *, batch_rows: int = DEFAULT_BATCH_ROWS, exactly_once: bool = True,
                  local_parallelism: int = 1, name: str | None = None) -> Sink:
    """``Sinks.postgres``: ``local_parallelism`` sink processors per member."""
    what = "Sinks.postgres"
    where = _where(dsn, what)
    _non_empty_str(table, what, "table")
    columns = _names(columns, what, "columns")
    keys = _names([upsert_key] if isinstance(upsert_key, str) else upsert_key, what, "upsert_key")
    if columns is not None and keys is not None and not set(keys) <= set(columns):
        raise ValueError(f"{what}: upsert_key {keys} must be among the columns {columns}")
    _positive_int(batch_rows, what, "batch_rows")
    _positive_int(local_parallelism, what, "local_parallelism")
    if not isinstance(exactly_once, bool):
        raise ValueError(f"{what}: exactly_once must be True (exactly-once when the job is) or False, "
                         f"got {exactly_once!r}")
    return Sink(name or f"postgres({where}/{table})",
                lambda: PostgresSinkP(dsn, table, columns, keys, batch_rows, exactly_once), local_parallelism)


def postgres_cdc_source(dsn: str, slot: str, publication: str, tables: Sequence[str] | None = None, *,
                        create: bool = False, poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
                        name: str | None = None) -> StreamSource:
    """``Sources.postgres_cdc``: a stream source with native timestamps (the commit times)."""
    what = "Sources.postgres_cdc"
    where = _where(dsn, what)
    _non_empty_str(slot, what, "slot")
    _non_empty_str(publication, what, "publication")
    tables = _names(tables, what, "tables")
    _positive_int(poll_interval_ms, what, "poll_interval_ms")

    def policy_supplier(policy: EventTimePolicy | None) -> Callable[[], Processor]:
        return lambda: PostgresCdcP(dsn, slot, publication, tables, create, policy, poll_interval_ms)

    return StreamSource(name or f"postgres_cdc({where}/{slot})", policy_supplier(None), 1,
                        policy_supplier=policy_supplier, native_timestamps=True)


def _where(dsn: str, what: str) -> str:
    """Where the DSN points (for vertex names: never the password); a clear error if it is no DSN."""
    if not isinstance(dsn, str) or not dsn:
        raise ValueError(f"{what}: dsn must be a non-empty libpq connection string or URL")
    try:
        return describe(dsn)
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None


def _non_empty_str(value: object, what: str, argument: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what}: {argument} must be a non-empty str, got {value!r}")


def _positive_int(value: object, what: str, argument: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what}: {argument} must be an int >= 1, got {value!r}")


def _names(values: Sequence[str] | None, what: str, argument: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str) or not all(isinstance(v, str) and v for v in values) or not values:
        raise ValueError(f"{what}: {argument} must be a non-empty list of names, got {values!r}")
    return list(values)
