"""Sources.postgres against a real server: a query split by ranges of a column over every
source processor of a cluster equals the table; the oracle is the table read back directly."""

from __future__ import annotations

import jet
from jet import Pipeline, Sinks, Sources
from jet.connectors.postgres.ranges import processor_range
from jet.execution.runner import execute
from tests.connectors.postgres.support import sql


def _orders(dsn: str, count: int) -> None:
    sql(dsn, "CREATE TABLE orders (id int PRIMARY KEY, customer text, amount numeric(10, 2), day date)")
    sql(dsn, "INSERT INTO orders SELECT n, 'c' || (n %% 7), n * 1.5, DATE '2026-01-01' + n %% 30 "
             "FROM generate_series(1, %s) AS n", (count,))


def test_a_query_split_by_ranges_over_three_members_reads_every_row_once(pg_dsn):
    _orders(pg_dsn, 5000)
    sql(pg_dsn, "INSERT INTO orders VALUES (-3, NULL, NULL, NULL)")  # a negative id, and NULLs
    p = Pipeline.create()
    p.read_from(Sources.postgres(pg_dsn, "SELECT id, customer, amount, day FROM orders", partition_column="id",
                                 fetch_rows=300)).write_to(Sinks.list())
    with jet.local_cluster(members=3) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        got = job.result()
    expected = sql(pg_dsn, "SELECT id, customer, amount, day FROM orders")
    assert sorted((r["id"], r["customer"], r["amount"], r["day"]) for r in got) == sorted(expected)
    assert len(got) == 5001


def test_rows_with_a_null_partition_value_are_read_by_the_first_processor_only(pg_dsn):
    sql(pg_dsn, "CREATE TABLE t (id int, ts timestamptz)")
    sql(pg_dsn, "INSERT INTO t SELECT n, TIMESTAMPTZ '2026-01-01' + n * INTERVAL '1 minute' "
                "FROM generate_series(1, 999) AS n")
    sql(pg_dsn, "INSERT INTO t VALUES (1000, NULL), (1001, NULL)")
    p = Pipeline.create()
    p.read_from(Sources.postgres(pg_dsn, "SELECT * FROM t", partition_column="ts", as_tuples=True)) \
        .write_to(Sinks.list())
    dag = p.to_dag(2)
    [source] = [v for v in dag.vertices if v.name.startswith("postgres(")]
    source.local_parallelism = 4  # four processors on one member: four ranges
    result = execute(dag, cooperative_threads=2, timeout=60)["default"]
    assert sorted(result) == sorted(sql(pg_dsn, "SELECT * FROM t"))


def test_without_a_partition_column_one_processor_reads_everything_in_order(pg_dsn):
    _orders(pg_dsn, 2500)
    p = Pipeline.create()
    p.read_from(Sources.postgres(pg_dsn, "SELECT id FROM orders ORDER BY id DESC", as_tuples=True,
                                 fetch_rows=100)).write_to(Sinks.list())
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        assert job.result() == [(n,) for n in range(2500, 0, -1)]


def test_the_ranges_of_every_processor_cover_the_values_once():
    for low, high, count in [(1, 100, 3), (-5, 5, 4), (7, 7, 3), (0, 2, 5)]:
        owners = {}
        for value in range(low, high + 1):
            owners[value] = [i for i in range(count) if _in(processor_range(low, high, i, count), value)]
        assert all(len(found) == 1 for found in owners.values()), (low, high, count, owners)


def _in(share, value) -> bool:
    return share.low is not None and share.low <= value and (value <= share.high if share.includes_high
                                                              else value < share.high)
