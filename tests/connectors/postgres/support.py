"""Helpers of the PostgreSQL connector tests: SQL run directly (the oracle side), and a sink or
source processor driven as the engine drives it."""

from __future__ import annotations

import time
from typing import Any

import pytest

# Every test module imports this one first: without psycopg they are skipped, saying why.
psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'jet-on-k8s[postgres]'")

from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.job_config import ProcessingGuarantee

from tests.connectors.test_exactly_once_files import feed, phase1, restore_into  # noqa: F401 - the same driving steps

EXACTLY_ONCE, AT_LEAST_ONCE = ProcessingGuarantee.EXACTLY_ONCE, ProcessingGuarantee.AT_LEAST_ONCE


def sql(dsn: str, statement: str, params: Any = None) -> list[tuple]:
    """Run one statement in autocommit; its rows (empty for statements without)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        cursor = connection.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def rows(dsn: str, table: str, order_by: str = "id") -> list[tuple]:
    return sql(dsn, f"SELECT * FROM {table} ORDER BY {order_by}")


def prepared_gids(dsn: str) -> list[str]:
    return [gid for (gid,) in sql(dsn, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() "
                                       "ORDER BY gid")]


def start(supplier, index: int = 0, parallelism: int = 1, guarantee=EXACTLY_ONCE, restore: list | None = None,
          job_id: str = "job1", vertex: str = "sink"):
    """A processor initialised as processor ``index`` of ``parallelism``, restored from the
    entries of a snapshot when given."""
    processor = supplier()
    outbox = Outbox(0) if vertex == "sink" else Outbox(1, 1 << 20)  # a source gets one downstream edge
    processor.init(outbox, Context(vertex_name=vertex, local_index=index, local_parallelism=parallelism,
                                      processing_guarantee=guarantee, job_id=job_id))
    if restore is not None:
        restore_into(processor, restore)
    return processor


def drain(processor, until=lambda records: False, quiet_s: float = 1.5, timeout_s: float = 30) -> list:
    """Call a source processor's ``complete()`` until ``until(items so far)`` holds, or nothing new
    came for ``quiet_s`` (the test server commits asynchronously: WAL is flushed within 200 ms);
    every item it emitted."""
    emitted: list = []
    started = last_new = time.monotonic()
    while time.monotonic() - started < timeout_s:
        before = len(emitted)
        processor.complete()
        for bucket in processor.outbox.buckets:
            emitted.extend(bucket)
            bucket.clear()
        if until(emitted):
            break
        now = time.monotonic()
        if len(emitted) > before:
            last_new = now
        elif now - last_new >= quiet_s:
            break
    return emitted


def apply_change(mirror: dict, record) -> None:
    """Apply one change record to a mirror of its table, ``{primary key value: row dict}`` (the
    table's key is its ``id`` column)."""
    if record.operation == "insert":
        mirror[record.after["id"]] = record.after
    elif record.operation == "update":
        old_id = (record.before or record.after)["id"]
        mirror.pop(old_id, None)
        mirror[record.after["id"]] = record.after
    elif record.operation == "delete":
        mirror.pop(record.before["id"], None)
    elif record.operation == "truncate":
        mirror.clear()


def table_as_mirror(dsn: str, table: str) -> dict:
    with psycopg.connect(dsn) as connection:
        cursor = connection.cursor(row_factory=psycopg.rows.dict_row)
        return {row["id"]: row for row in cursor.execute(f"SELECT * FROM {table}")}


def apply_to_mirror_table(dsn: str, table: str):
    """A sink-builder state: applies change records to table ``table`` (same columns, key ``id``)."""
    return _MirrorTable(dsn, table)


class _MirrorTable:
    def __init__(self, dsn: str, table: str) -> None:
        self.connection = psycopg.connect(dsn, autocommit=True)
        self.table = table

    def apply(self, record) -> None:
        if record.operation in ("delete", "update"):
            old_id = (record.before or record.after)["id"]
            self.connection.execute(f"DELETE FROM {self.table} WHERE id = %s", (old_id,))
        if record.operation in ("insert", "update"):
            columns = list(record.after)
            self.connection.execute(
                f"INSERT INTO {self.table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))}) "
                f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = EXCLUDED.{c}' for c in columns)}",
                [record.after[c] for c in columns])
