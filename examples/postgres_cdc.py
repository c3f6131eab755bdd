"""The changes of a PostgreSQL table as a stream: row changes per operation and second.

    export JET_POSTGRES_DSN='postgresql://jet:secret@localhost:5432/shop'
    jet run --processing-guarantee exactly-once --snapshot-interval 1s examples/postgres_cdc.py trades --timeout 30s

Sources.postgres_cdc reads the logical replication slot ``jet_<table>`` through the publication
``jet_<table>`` (both created when missing, so changes are captured from the first run on; the
server needs ``wal_level = logical``). Each change record carries its commit time, the native
timestamp here: every second of commit time, the number of inserts, updates and deletes goes to
the job's result list. The slot's position follows the completed snapshots, so a restarted job
goes on where its last snapshot was. Drop the slot when done:
``SELECT pg_drop_replication_slot('jet_trades')`` (a slot keeps the server's WAL).

postgres_cdc (native timestamps) -> tumbling window 1 s, count per operation
"""

import os

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition


def dsn() -> str:
    """The server to read from, from the environment (on Kubernetes: a Secret, see docs/postgres.md)."""
    value = os.environ.get("JET_POSTGRES_DSN")
    if not value:
        raise SystemExit("set JET_POSTGRES_DSN to a PostgreSQL connection string or URL")
    return value


def pipeline(table="trades"):
    p = Pipeline.create()
    (p.read_from(Sources.postgres_cdc(dsn(), f"jet_{table}", f"jet_{table}", [table], create=True))
        .with_native_timestamps(0)
        .grouping_key(lambda change: change.operation)
        .window(WindowDefinition.tumbling(1000))
        .aggregate(AggregateOperations.counting())
        .write_to(Sinks.list("changes")))
    return p
