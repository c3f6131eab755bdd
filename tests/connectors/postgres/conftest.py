"""Fixtures of the PostgreSQL connector tests: one real server per test session, a fresh
database per test. Without the server programs the tests skip (naming the Debian package),
except under ``CI=true``, where they fail."""

from __future__ import annotations

import itertools
import os

import pytest

from tests.connectors.postgres.server import PostgresServer, PostgresUnavailable, start_server

_database_numbers = itertools.count()


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server (started on first use, stopped at the end)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed: pip install 'psycopg[binary]'")
    try:
        server = start_server()
    except PostgresUnavailable as error:
        _unavailable(str(error))
    yield server
    server.stop()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture
def pg_dsn(pg_server: PostgresServer) -> str:
    """The DSN of a new, empty database on the session's server; dropped after the test (with
    the replication slots and prepared transactions left in it)."""
    import psycopg
    name = f"test_{os.getpid()}_{next(_database_numbers)}"
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield pg_server.dsn(name)
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        for (slot,) in admin.execute("SELECT slot_name FROM pg_replication_slots WHERE database = %s",
                                     (name,)).fetchall():
            admin.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        for (gid,) in admin.execute("SELECT gid FROM pg_prepared_xacts WHERE database = %s", (name,)).fetchall():
            with psycopg.connect(pg_server.dsn(name), autocommit=True) as owner:
                owner.execute(f"ROLLBACK PREPARED '{gid}'")
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
