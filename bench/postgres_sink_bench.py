"""Sinks.postgres against a plain psycopg loop writing the same rows into the same server.

    python bench/postgres_sink_bench.py --rows 200000 --runs 3
    JET_POSTGRES_DSN=postgresql://... python bench/postgres_sink_bench.py   # an existing server

Without JET_POSTGRES_DSN it starts a throwaway PostgreSQL 15 (tests/connectors/postgres/server.py:
fsync off, asynchronous commit), so the figures are the client side's cost, not the disk's. Each
measurement writes ``--rows`` rows (id int, name text, amount numeric) into a fresh table:

- plain COPY: one psycopg ``cursor.copy`` per 1,000 rows, one commit at the end;
- plain upsert: ``executemany(INSERT ... ON CONFLICT DO UPDATE)`` per 1,000 rows, one commit;
- jet COPY / jet upsert: ``Sources.items(rows) -> Sinks.postgres`` run in this process
  (``jet.execution.runner.execute``, one member, one cooperative thread), batch_rows=1000;
- jet exactly-once: the sink processor alone, driven through a snapshot (phase 1 PREPARE, phase 2
  COMMIT PREPARED) every 10,000 rows, as the engine drives it under an exactly-once job.

Best of ``--runs``; rows/s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

import psycopg  # noqa: E402

from jet import Pipeline, Sinks, Sources  # noqa: E402
from jet.execution.runner import execute  # noqa: E402

BATCH = 1000
SNAPSHOT_EVERY_ROWS = 10_000


def fresh_table(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS bench")
        connection.execute("CREATE TABLE bench (id int PRIMARY KEY, name text, amount numeric(12, 2))")


def make_rows(count: int) -> list[tuple]:
    return [(n, f"name {n}", n / 100) for n in range(count)]


def plain_copy(dsn: str, rows: list[tuple]) -> None:
    with psycopg.connect(dsn) as connection, connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            with cursor.copy("COPY bench (id, name, amount) FROM STDIN") as copy:
                for row in rows[start:start + BATCH]:
                    copy.write_row(row)
        connection.commit()


def plain_upsert(dsn: str, rows: list[tuple]) -> None:
    statement = ("INSERT INTO bench (id, name, amount) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                 "name = EXCLUDED.name, amount = EXCLUDED.amount")
    with psycopg.connect(dsn) as connection, connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            cursor.executemany(statement, rows[start:start + BATCH])
        connection.commit()


def jet_pipeline(dsn: str, rows: list[tuple], upsert: bool) -> None:
    p = Pipeline.create()
    p.read_from(Sources.items(rows)).write_to(
        Sinks.postgres(dsn, "bench", upsert_key="id" if upsert else None, batch_rows=BATCH))
    execute(p.to_dag(1), cooperative_threads=1, timeout=600)


def jet_exactly_once(dsn: str, rows: list[tuple]) -> None:
    from jet.core.inbox import Inbox
    from jet.core.outbox import Outbox
    from jet.core.processor import Context
    from jet.job_config import ProcessingGuarantee
    sink = Sinks.postgres(dsn, "bench", batch_rows=BATCH).supplier()
    sink.init(Outbox(0), Context(vertex_name="sink", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
                                 job_id="bench"))
    for start in range(0, len(rows), BATCH):
        inbox = Inbox()
        inbox.add_chunk(rows[start:start + BATCH])
        sink.process(0, inbox)
        if (start + BATCH) % SNAPSHOT_EVERY_ROWS == 0:
            sink.snapshot_commit_prepare()
            sink.outbox.snapshot_entries.clear()
            sink.snapshot_commit_finish(True)
    sink.complete()
    sink.close()


def count(dsn: str) -> int:
    with psycopg.connect(dsn) as connection:
        return connection.execute("SELECT count(*) FROM bench").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    server = None
    dsn = os.environ.get("JET_POSTGRES_DSN")
    if not dsn:
        from tests.connectors.postgres.server import start_server
        server = start_server()
        dsn = server.dsn()
    rows = make_rows(args.rows)
    candidates = {
        "plain COPY": lambda: plain_copy(dsn, rows),
        "jet COPY": lambda: jet_pipeline(dsn, rows, upsert=False),
        "jet exactly-once (COPY, 2PC every 10k rows)": lambda: jet_exactly_once(dsn, rows),
        "plain upsert": lambda: plain_upsert(dsn, rows),
        "jet upsert": lambda: jet_pipeline(dsn, rows, upsert=True),
    }
    try:
        print(f"{args.rows:,} rows, best of {args.runs}")
        for name, run in candidates.items():
            best = float("inf")
            for _ in range(args.runs):
                fresh_table(dsn)
                started = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - started)
                assert count(dsn) == args.rows, name
            print(f"| {name} | {best:.2f} s | {args.rows / best:,.0f} rows/s |")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
