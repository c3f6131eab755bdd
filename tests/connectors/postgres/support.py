"""Helpers of the PostgreSQL connector tests: SQL run directly (the oracle side), and a sink or
source processor driven as the engine drives it."""

from __future__ import annotations

from typing import Any

import psycopg

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.job_config import ProcessingGuarantee
from tests.connectors.test_exactly_once_files import feed, phase1  # noqa: F401 - the same driving steps

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
    processor.init(Outbox(0), Context(vertex_name=vertex, local_index=index, local_parallelism=parallelism,
                                      processing_guarantee=guarantee, job_id=job_id))
    if restore is not None:
        inbox = Inbox()
        inbox.add_chunk(list(restore))
        processor.restore_from_snapshot(inbox)
        assert inbox.is_empty()
        assert processor.finish_snapshot_restore() is True
    return processor
