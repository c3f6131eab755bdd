"""How fast Sources.postgres_cdc turns a replication slot's changes into change records.

    python bench/postgres_cdc_bench.py --transactions 100 --rows 1000

Starts a throwaway PostgreSQL 15 (tests/connectors/postgres/server.py), commits ``--transactions``
inserts of ``--rows`` rows (id int, name text, amount numeric) each into a table with a slot and
a publication, then drives the CDC source processor alone (as the engine calls it) until it
has emitted every change: peeks, pgoutput decoding, psycopg's loaders, the change records.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

from jet import Sources  # noqa: E402
from jet.connectors.postgres import create_slot_and_publication  # noqa: E402
from tests.connectors.postgres.server import start_server  # noqa: E402
from tests.connectors.postgres.support import AT_LEAST_ONCE, drain, sql, start  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transactions", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    server = start_server()
    try:
        dsn = server.dsn()
        sql(dsn, "CREATE TABLE t (id int PRIMARY KEY, name text, amount numeric(12, 2))")
        create_slot_and_publication(dsn, "bench_slot", "bench_pub", ["t"])
        for k in range(args.transactions):
            sql(dsn, "INSERT INTO t SELECT n, 'name ' || n, n / 100.0 FROM generate_series(%s::int, %s::int) n",
                (k * args.rows, (k + 1) * args.rows - 1))
        time.sleep(1)  # the server commits asynchronously: let the WAL be flushed
        total = args.transactions * args.rows
        source = start(Sources.postgres_cdc(dsn, "bench_slot", "bench_pub", ["t"], poll_interval_ms=10).supplier,
                       guarantee=AT_LEAST_ONCE, vertex="cdc")
        started = time.perf_counter()
        records = drain(source, until=lambda got: len(got) >= total)
        elapsed = time.perf_counter() - started
        source.close()
        assert len(records) == total
        print(f"{total:,} changes in {args.transactions} transactions: {elapsed:.2f} s, {total / elapsed:,.0f} changes/s")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
