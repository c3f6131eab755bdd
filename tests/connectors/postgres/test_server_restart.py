"""An exactly-once job into PostgreSQL on a local cluster of member processes while the server is
stopped (``pg_ctl stop -m fast``) and started again on the same port and data directory.

The oracle is plain Python: the numbers the sources emit, each once (the table has no key, so
a number written twice would show). A server that stays away must fail the job within a
bounded time, naming the server (never its password), and leave the committed rows as they were.
"""

from __future__ import annotations

import time

import pytest

import jet
from jet.connectors.postgres.connection import SERVER_OUTAGE_S
from tests.cluster.cluster_support import join_failure, wait_until
from tests.connectors.postgres.server import PostgresUnavailable, start_server
from tests.connectors.postgres.support import prepared_gids, psycopg, sql
from tests.connectors.postgres.test_on_cluster import EXACTLY_ONCE, TOTAL, completed_snapshots, numbers_into_postgres

pytestmark = pytest.mark.slow

OUTAGE_S = 4.0


@pytest.fixture
def own_server():
    """A server of this test alone (the test stops it)."""
    try:
        server = start_server()
    except PostgresUnavailable as error:
        pytest.skip(str(error))
    yield server
    server.stop()


def count(dsn: str) -> int:
    try:
        return sql(dsn, "SELECT count(*) FROM numbers")[0][0]
    except psycopg.OperationalError:
        return -1


def test_an_exactly_once_job_rides_out_a_server_restart(own_server, tmp_path):
    dsn = own_server.dsn()
    sql(dsn, "CREATE TABLE numbers (n int, label text)")  # no key: a repeated row would stay
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        job = cluster.new_job(numbers_into_postgres(dsn), {**EXACTLY_ONCE, "name": "pg-restart"})
        wait_until(lambda: count(dsn) >= 500, 60, "rows before the stop")
        own_server.stop_fast()
        time.sleep(OUTAGE_S)
        own_server.start_again()
        job.join(timeout=180)
        assert job.info()["restarts"] == 0
    got = sql(dsn, "SELECT n, label FROM numbers ORDER BY n")
    assert len(got) == TOTAL and got == [(n, f"n{n}") for n in range(TOTAL)]
    assert prepared_gids(dsn) == []


def test_a_server_that_stays_away_fails_the_job_in_bounded_time_naming_it(own_server, tmp_path):
    dsn = own_server.dsn()
    sql(dsn, "CREATE TABLE numbers (n int, label text)")
    with jet.local_cluster(members=2, log_dir=tmp_path) as cluster:
        job = cluster.new_job(numbers_into_postgres(dsn), {**EXACTLY_ONCE, "name": "pg-gone"})
        wait_until(lambda: completed_snapshots(cluster, job.id) >= 2 and count(dsn) >= 300, 60, "committed rows")
        own_server.stop_fast()
        message, took = join_failure(job, SERVER_OUTAGE_S + 90)
        own_server.start_again()
    assert f"{own_server.host}:{own_server.port}" in message and own_server.password not in message, message
    assert took < SERVER_OUTAGE_S + 60, f"failed after {took:.0f} s"
    got = [n for (n,) in sql(dsn, "SELECT n FROM numbers")]
    assert len(got) == len(set(got)) and set(got) <= set(range(TOTAL)), "committed rows once each"
