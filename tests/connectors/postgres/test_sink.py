"""Sinks.postgres against a real server, its processors driven through the snapshot phases as
the engine drives them; the oracle is plain Python and the table read back directly. A crash is
a processor abandoned without ``close()`` (its connections dropped) and a new one restored from
the entries the last completed snapshot holds."""

from __future__ import annotations

import pytest

from jet import Pipeline, Sinks, Sources
from jet.connectors.postgres import PostgresTableError
from jet.execution.runner import execute
from tests.connectors.postgres.support import (AT_LEAST_ONCE, feed, phase1, prepared_gids, rows, sql,
                                               start)


@pytest.fixture
def kv(pg_dsn):
    sql(pg_dsn, "CREATE TABLE kv (id int PRIMARY KEY, value text)")
    return pg_dsn


def crash(processor) -> None:
    """The member dies: no close(), its connections just drop (the server rolls back what is open)."""
    for connection in (processor._data, processor._control):
        if connection is not None:
            connection.pgconn.finish()


def test_upserts_leave_the_last_value_of_each_key_as_the_oracle_says(kv):
    items = [{"id": n % 50, "value": f"v{n}"} for n in range(400)]
    sink = start(Sinks.postgres(kv, "kv", upsert_key="id", batch_rows=64).supplier, guarantee=AT_LEAST_ONCE)
    feed(sink, items[:250])
    feed(sink, items[250:])
    assert sink.complete() is True
    sink.close()
    oracle = {}
    for item in items:
        oracle[item["id"]] = item["value"]
    assert rows(kv, "kv") == sorted(oracle.items())


def test_a_plain_sink_copies_tuples_and_dicts_in_a_pipeline(kv):
    p = Pipeline.create()
    p.read_from(Sources.items(range(3000))).map(lambda n: (n, str(n)) if n % 2 else {"id": n, "value": str(n)}) \
        .write_to(Sinks.postgres(kv, "kv", batch_rows=500))
    execute(p.to_dag(2), cooperative_threads=2, timeout=60)
    assert rows(kv, "kv") == [(n, str(n)) for n in range(3000)]


def test_exactly_once_rows_are_invisible_until_phase_2_then_there_once(kv):
    sink = start(Sinks.postgres(kv, "kv", batch_rows=10).supplier)
    feed(sink, [(n, "a") for n in range(25)])
    assert rows(kv, "kv") == []
    entries = phase1(sink)
    assert len(entries) == 1 and rows(kv, "kv") == []
    assert prepared_gids(kv) == ["jet-postgres-job1-sink-0-0"]
    feed(sink, [(n, "b") for n in range(25, 30)])  # between the phases: the next transaction
    assert sink.snapshot_commit_finish(True) is True
    assert rows(kv, "kv") == [(n, "a") for n in range(25)] and prepared_gids(kv) == []
    assert sink.complete() is True
    sink.close()
    assert rows(kv, "kv") == [(n, "a") for n in range(25)] + [(n, "b") for n in range(25, 30)]


def test_a_restore_commits_what_the_snapshot_prepared_and_rolls_back_the_rest(kv):
    sink = start(Sinks.postgres(kv, "kv").supplier)
    feed(sink, [(n, "x") for n in range(10)])
    entries = phase1(sink)  # snapshot 1 completes everywhere, but this member dies before phase 2
    feed(sink, [(n, "x") for n in range(10, 20)])
    phase1(sink)  # snapshot 2's phase 1 ran here, the snapshot never completed
    feed(sink, [(n, "x") for n in range(20, 25)])  # open, unprepared
    crash(sink)
    assert len(prepared_gids(kv)) == 2 and rows(kv, "kv") == []

    restored = start(Sinks.postgres(kv, "kv").supplier, restore=entries)
    assert rows(kv, "kv") == [(n, "x") for n in range(10)]  # snapshot 1's rows, once
    assert prepared_gids(kv) == []  # snapshot 2's transaction is rolled back: the source replays it
    feed(restored, [(n, "x") for n in range(10, 25)])
    restored.complete()
    restored.close()
    assert rows(kv, "kv") == [(n, "x") for n in range(25)]


def test_a_restore_after_phase_2_ran_commits_nothing_twice(kv):
    sink = start(Sinks.postgres(kv, "kv").supplier)
    feed(sink, [(1, "a")])
    entries = phase1(sink)
    sink.snapshot_commit_finish(True)
    crash(sink)
    restored = start(Sinks.postgres(kv, "kv").supplier, restore=entries)
    restored.close()
    assert rows(kv, "kv") == [(1, "a")] and prepared_gids(kv) == []


def test_a_restore_on_fewer_processors_commits_every_prepared_transaction(kv):
    sinks = [start(Sinks.postgres(kv, "kv").supplier, index=i, parallelism=3) for i in range(3)]
    for i, sink in enumerate(sinks):
        feed(sink, [(n, "p") for n in range(i, 90, 3)])
    entries = [entry for sink in sinks for entry in phase1(sink)]
    for i, sink in enumerate(sinks):
        feed(sink, [(n, "late") for n in range(100 + i, 130, 3)])
        phase1(sink)  # never completes
        crash(sink)
    survivors = [start(Sinks.postgres(kv, "kv").supplier, index=i, parallelism=2, restore=entries) for i in range(2)]
    assert rows(kv, "kv") == [(n, "p") for n in range(90)]
    assert prepared_gids(kv) == []
    for survivor in survivors:
        survivor.close()


def test_a_fresh_start_rolls_back_what_an_earlier_execution_of_the_job_left_prepared(kv):
    sink = start(Sinks.postgres(kv, "kv").supplier)
    feed(sink, [(1, "never")])
    phase1(sink)
    crash(sink)  # before the job's first snapshot completed
    again = start(Sinks.postgres(kv, "kv").supplier)
    feed(again, [(1, "once")])
    again.complete()
    again.close()
    assert rows(kv, "kv") == [(1, "once")] and prepared_gids(kv) == []


def test_another_jobs_prepared_transactions_are_left_alone(kv):
    other = start(Sinks.postgres(kv, "kv").supplier, job_id="other")
    feed(other, [(7, "other")])
    phase1(other)
    mine = start(Sinks.postgres(kv, "kv").supplier, job_id="mine")
    feed(mine, [(1, "mine")])
    mine.complete()
    mine.close()
    assert prepared_gids(kv) == ["jet-postgres-other-sink-0-0"]
    other.snapshot_commit_finish(True)
    other.close()
    assert rows(kv, "kv") == [(1, "mine"), (7, "other")]


def test_at_least_once_commits_at_each_snapshot(kv):
    sink = start(Sinks.postgres(kv, "kv", upsert_key="id").supplier, guarantee=AT_LEAST_ONCE)
    feed(sink, [(1, "a"), (2, "b")])
    assert rows(kv, "kv") == []
    assert phase1(sink) == []
    assert rows(kv, "kv") == [(1, "a"), (2, "b")]
    feed(sink, [(3, "c")])
    crash(sink)
    replay = start(Sinks.postgres(kv, "kv", upsert_key="id").supplier, guarantee=AT_LEAST_ONCE)
    feed(replay, [(2, "b"), (3, "c")])  # the source replays from the snapshot: upserts absorb it
    replay.complete()
    replay.close()
    assert rows(kv, "kv") == [(1, "a"), (2, "b"), (3, "c")]


def test_a_missing_table_or_column_is_named(kv):
    with pytest.raises(PostgresTableError,
                       match=r"table 'nope' does not exist in jet@127.0.0.1:\d+/test_\w+ \(relation \"nope\" does not exist\)"):
        start(Sinks.postgres(kv, "nope").supplier)
    with pytest.raises(PostgresTableError, match=r"table 'kv' .* has no column\(s\) 'missing'"):
        start(Sinks.postgres(kv, "kv", columns=["id", "missing"]).supplier)


def test_a_slot_reused_after_a_failed_snapshot_is_not_committed_by_a_restore_of_the_older_one(kv):
    sink = start(Sinks.postgres(kv, "kv").supplier)
    feed(sink, [(1, "a")])
    snapshot_1 = phase1(sink)
    sink.snapshot_commit_finish(True)  # slot 0 committed
    feed(sink, [(2, "b")])
    phase1(sink)
    sink.snapshot_commit_finish(False)  # snapshot 2 failed: slot 1 stays prepared
    feed(sink, [(3, "c")])  # slot 0 again
    phase1(sink)  # snapshot 3 records slots 0 and 1, then every member is lost before it completes
    crash(sink)
    restored = start(Sinks.postgres(kv, "kv").supplier, restore=snapshot_1)
    assert rows(kv, "kv") == [(1, "a")]  # snapshot 3's rows in slot 0 are not snapshot 1's: rolled back
    assert prepared_gids(kv) == []
    restored.close()


def test_dicts_into_some_columns_of_a_schema_qualified_table_upserted_on_a_composite_key(pg_dsn):
    sql(pg_dsn, "CREATE SCHEMA stock")
    sql(pg_dsn, "CREATE TABLE stock.levels (site text, sku int, qty int, updated timestamptz DEFAULT now(), "
                "PRIMARY KEY (site, sku))")
    items = [{"site": f"s{n % 3}", "sku": n % 5, "qty": n, "ignored": "extra keys are not written"} for n in range(60)]
    sink = start(Sinks.postgres(pg_dsn, "stock.levels", columns=["site", "sku", "qty"], upsert_key=["site", "sku"],
                                batch_rows=7).supplier, guarantee=AT_LEAST_ONCE)
    feed(sink, items)
    sink.complete()
    sink.close()
    oracle = {}
    for item in items:
        oracle[(item["site"], item["sku"])] = item["qty"]
    assert sql(pg_dsn, "SELECT site, sku, qty FROM stock.levels ORDER BY site, sku") == sorted(
        (site, sku, qty) for (site, sku), qty in oracle.items())
    assert sql(pg_dsn, "SELECT count(*) FROM stock.levels WHERE updated IS NULL") == [(0,)]  # the default applies


def test_a_restore_does_not_commit_the_next_snapshots_transaction_under_the_same_id(kv):
    sink = start(Sinks.postgres(kv, "kv").supplier)
    feed(sink, [(1, "a")])
    snapshot_1 = phase1(sink)
    sink.snapshot_commit_finish(True)  # slot 0 committed and free again ...
    feed(sink, [(2, "b")])
    snapshot_2 = phase1(sink)  # ... so snapshot 2 prepares slot 0 too; it never completes
    assert [key.key[2] for key, _ in snapshot_1] == [key.key[2] for key, _ in snapshot_2] == [0]
    crash(sink)
    restored = start(Sinks.postgres(kv, "kv").supplier, restore=snapshot_1)
    assert rows(kv, "kv") == [(1, "a")] and prepared_gids(kv) == []  # (2, "b") is replayed by the source
    restored.close()
