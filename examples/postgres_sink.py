"""Trades written into a PostgreSQL table, exactly once through two-phase commit.

    export JET_POSTGRES_DSN='postgresql://jet:secret@localhost:5432/shop'
    jet run --processing-guarantee exactly-once --snapshot-interval 1s examples/postgres_sink.py --timeout 10s

Sources.item_stream generates RATE trades a second (default 500); each becomes a row of table
``trades`` (created if missing), upserted by id. Under an exactly-once job each sink processor
writes into a transaction that the snapshot's phase 1 prepares (PREPARE TRANSACTION) and its
phase 2 commits, so a reader sees the rows once per snapshot, each exactly once, also after a
member is lost. The server needs ``max_prepared_transactions`` > 0 for that.

item_stream -> dict per trade -> Sinks.postgres(upsert on id)
"""

import os

from jet import Pipeline, Sinks, Sources

SYMBOLS = ("ACME", "GLBX", "INIT", "UMBR", "HOOL")
TABLE_DDL = ("CREATE TABLE IF NOT EXISTS trades (id bigint PRIMARY KEY, time_ms bigint NOT NULL, "
             "symbol text NOT NULL, price numeric(10, 2) NOT NULL, quantity int NOT NULL)")


def dsn() -> str:
    """The server to write to, from the environment (on Kubernetes: a Secret, see docs/postgres.md)."""
    value = os.environ.get("JET_POSTGRES_DSN")
    if not value:
        raise SystemExit("set JET_POSTGRES_DSN to a PostgreSQL connection string or URL")
    return value


def trade(timestamp, sequence):
    """The trade due at ``timestamp`` (epoch ms), as a row of table ``trades``."""
    return {"id": sequence, "time_ms": timestamp, "symbol": SYMBOLS[sequence % len(SYMBOLS)],
            "price": round(100 + timestamp * 7919 % 2000 / 100, 2), "quantity": 1 + sequence % 50}


def create_table(target: str) -> None:
    import psycopg
    with psycopg.connect(target, autocommit=True, connect_timeout=10) as connection:
        connection.execute(TABLE_DDL)


def pipeline(rate="500"):
    target = dsn()
    create_table(target)
    p = Pipeline.create()
    (p.read_from(Sources.item_stream(int(rate), trade))
        .with_native_timestamps(0)
        .write_to(Sinks.postgres(target, "trades", upsert_key="id", batch_rows=500)))
    return p
