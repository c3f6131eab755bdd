"""Bad input fails clearly: an unreachable or silent server, a wrong password, a missing table;
each error names the server (and the table or query), never the password, and a job fails with it."""

from __future__ import annotations

import socket
import time

import pytest

from jet import Pipeline, Sinks, Sources
from jet.connectors.postgres import PostgresConnectionError, PostgresTableError
from jet.execution.errors import JobFailedError
from jet.execution.runner import execute
from tests.connectors.postgres.server import PASSWORD
from tests.connectors.postgres.support import sql


def run(source=None, sink=None, items=(1,)):
    p = Pipeline.create()
    stage = p.read_from(source or Sources.items(list(items)))
    stage.write_to(sink or Sinks.list())
    return execute(p.to_dag(1), cooperative_threads=1, timeout=60)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def test_an_unreachable_server_fails_the_job_naming_it_without_the_password():
    port = closed_port()
    dsn = f"postgresql://jet:{PASSWORD}@127.0.0.1:{port}/shop"
    with pytest.raises(JobFailedError) as failure:
        run(Sources.postgres(dsn, "SELECT 1"))
    message = str(failure.value)
    assert f"Sources.postgres: cannot connect to PostgreSQL at jet@127.0.0.1:{port}/shop" in message
    assert isinstance(failure.value.__cause__, PostgresConnectionError)
    assert PASSWORD not in message and PASSWORD not in failure.value.traceback_text


def test_a_server_that_never_answers_fails_within_the_connect_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts the TCP connection, never says a word
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(JobFailedError, match=f"cannot connect to PostgreSQL at .*127.0.0.1:{port}.*timeout"):
            run(sink=Sinks.postgres(f"host=127.0.0.1 port={port} user=x password=y connect_timeout=2", "t"))
        assert time.monotonic() - started < 30


def test_a_wrong_password_is_named_as_such_and_not_shown(pg_dsn):
    wrong = pg_dsn.replace(PASSWORD, "not-the-secret-42")
    with pytest.raises(JobFailedError) as failure:
        run(sink=Sinks.postgres(wrong, "t"))
    message = str(failure.value)
    assert "password authentication failed for user \"jet\"" in message
    assert "Sinks.postgres: cannot connect to PostgreSQL at jet@127.0.0.1:" in message
    assert "not-the-secret-42" not in message and "not-the-secret-42" not in failure.value.traceback_text


def test_a_missing_table_fails_the_source_and_the_sink_naming_it(pg_dsn):
    with pytest.raises(JobFailedError) as failure:
        run(Sources.postgres(pg_dsn, "SELECT * FROM no_such_table"))
    assert isinstance(failure.value.__cause__, PostgresTableError)
    assert "relation \"no_such_table\" does not exist (the query 'SELECT * FROM no_such_table' in jet@" \
        in str(failure.value)
    with pytest.raises(JobFailedError, match="table 'no_such_table' does not exist in jet@127.0.0.1"):
        run(sink=Sinks.postgres(pg_dsn, "no_such_table"))


def test_an_item_that_does_not_fit_the_table_is_named_and_nothing_is_committed(pg_dsn):
    sql(pg_dsn, "CREATE TABLE t (id int, name text)")
    with pytest.raises(JobFailedError, match=r"an item must be a dict or a tuple of 2 values \(id, name\) .*got 3"):
        run(sink=Sinks.postgres(pg_dsn, "t", batch_rows=2), items=[(1, "a"), (2, "b"), 3])
    assert sql(pg_dsn, "SELECT * FROM t") == []  # no snapshot, no completion: nothing committed


def test_factory_arguments_are_checked_when_the_pipeline_is_built():
    with pytest.raises(ValueError, match="Sinks.postgres: batch_rows must be an int >= 1, got 0"):
        Sinks.postgres("host=h", "t", batch_rows=0)
    with pytest.raises(ValueError, match=r"Sinks.postgres: upsert_key \['k'\] must be among the columns"):
        Sinks.postgres("host=h", "t", columns=["a"], upsert_key="k")
    with pytest.raises(ValueError, match="Sources.postgres_cdc: slot must be a non-empty str"):
        Sources.postgres_cdc("host=h", "", "pub")
    with pytest.raises(ValueError, match="Sources.postgres: not a valid PostgreSQL DSN"):
        Sources.postgres("host=h password=secret nonsense", "SELECT 1")
    assert Sinks.postgres("postgresql://u:secret@db:5433/shop", "t").name == "postgres(u@db:5433/shop/t)"
