"""examples/postgres_sink.py and examples/postgres_cdc.py through `jet run`, against the test
server (the DSN from JET_POSTGRES_DSN, as a user runs them); the table is the oracle."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from tests.cli.support import jet_command, jet_env
from tests.conftest import REPO_ROOT
from tests.connectors.postgres.support import psycopg, sql

pytestmark = pytest.mark.slow


def jet_run(dsn: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    command = jet_command("run", "--members", "2", "--processing-guarantee", "exactly-once", "--snapshot-interval",
                          "500ms", *args)
    done = subprocess.run(command, cwd=REPO_ROOT, env=jet_env(JET_POSTGRES_DSN=dsn), capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert " ERROR " not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def test_the_sink_example_writes_each_trade_once(pg_dsn, tmp_path):
    jet_run(pg_dsn, tmp_path, "examples/postgres_sink.py", "200", "--timeout", "5s")
    ids = [n for (n,) in sql(pg_dsn, "SELECT id FROM trades ORDER BY id")]
    assert len(ids) > 200
    for member in (0, 1):  # each member's source emits its share of the sequence: none missing
        share = [n for n in ids if n % 2 == member]
        assert share == list(range(member, share[-1] + 1, 2))


def test_the_cdc_example_counts_the_changes_of_the_table(pg_dsn, tmp_path):
    sql(pg_dsn, "CREATE TABLE trades (id int PRIMARY KEY, qty int)")
    output = tmp_path / "changes.jsonl"
    stop = threading.Event()

    def write() -> None:  # an insert every 5 ms, each its own transaction
        with psycopg.connect(pg_dsn, autocommit=True) as connection:
            n = 0
            while not stop.wait(0.005):
                connection.execute("INSERT INTO trades VALUES (%s, 1)", (n,))
                n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        jet_run(pg_dsn, tmp_path, "examples/postgres_cdc.py", "trades", "--timeout", "6s", "--output", str(output))
    finally:
        stop.set()
        writer.join()
    windows = [json.loads(line) for line in output.read_text().splitlines()]  # [start, end, key, count, early]
    assert len(windows) >= 2 and {w[2] for w in windows} == {"insert"}
    # the oracle: the inserts per second of their commit time (the server tracks commit timestamps);
    # the first window may have begun before the job created the slot
    oracle = dict(sql(pg_dsn, "SELECT (floor(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::bigint"
                              " / 1000) * 1000 AS second, count(*) FROM trades GROUP BY second"))
    windows.sort()
    assert [(w[0], w[3]) for w in windows[1:]] == [(w[0], oracle[w[0]]) for w in windows[1:]]
    assert windows[0][3] <= oracle[windows[0][0]]
