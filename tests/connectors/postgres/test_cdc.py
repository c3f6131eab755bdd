"""Sources.postgres_cdc against a real server: the changes applied to a mirror equal the table
(the oracle is the table read back directly), also across a restart from a snapshot."""

from __future__ import annotations

import random
import time

import pytest

from jet import Sources
from jet.connectors.postgres import ChangeRecord, PostgresError, cdc_source, create_slot_and_publication
from jet.connectors.postgres.pgoutput import parse_lsn
from tests.connectors.postgres.support import AT_LEAST_ONCE, apply_change, drain, phase1, sql, start, table_as_mirror


@pytest.fixture
def items_table(pg_dsn):
    sql(pg_dsn, "CREATE TABLE items (id int PRIMARY KEY, name text, qty int, price numeric(8, 2))")
    create_slot_and_publication(pg_dsn, "jet_slot", "jet_pub", ["items"])
    return pg_dsn


def random_changes(dsn: str, transactions: int, seed: int, first_id: int = 0, pause_s: float = 0.0) -> int:
    """Inserts, updates (some of the key) and deletes in ``transactions`` transactions, ``pause_s``
    apart; the number of row changes made."""
    chooser, changes = random.Random(seed), 0
    next_id = first_id
    import psycopg
    with psycopg.connect(dsn) as connection:
        for _ in range(transactions):
            with connection.transaction():
                for _ in range(chooser.randint(1, 5)):
                    ids = [row[0] for row in connection.execute("SELECT id FROM items").fetchall()]
                    action = chooser.random()
                    if action < 0.5 or not ids:
                        connection.execute("INSERT INTO items VALUES (%s, %s, %s, %s)",
                                           (next_id, f"item {next_id}", chooser.randint(0, 9), next_id / 4))
                        next_id += 1
                    elif action < 0.7:
                        connection.execute("UPDATE items SET qty = qty + 1, name = name || '+' WHERE id = %s",
                                           (chooser.choice(ids),))
                    elif action < 0.8:
                        connection.execute("UPDATE items SET id = %s WHERE id = %s", (next_id, chooser.choice(ids)))
                        next_id += 1
                    else:
                        connection.execute("DELETE FROM items WHERE id = %s", (chooser.choice(ids),))
                    changes += 1
            time.sleep(pause_s)
    return changes


def cdc(dsn: str, **options):
    return Sources.postgres_cdc(dsn, "jet_slot", "jet_pub", ["items"], poll_interval_ms=10, **options).supplier


def confirmed_lsn(dsn: str) -> int:
    [(lsn,)] = sql(dsn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'jet_slot'")
    return parse_lsn(lsn)


def test_changes_applied_to_a_mirror_equal_the_table(items_table):
    changes = random_changes(items_table, 60, seed=1)
    source = start(cdc(items_table), guarantee=AT_LEAST_ONCE, vertex="cdc")
    records = drain(source, until=lambda got: len(got) >= changes)
    assert len(records) == changes
    assert all(type(r) is ChangeRecord and r.schema == "public" and r.table == "items" for r in records)
    assert {r.operation for r in records} == {"insert", "update", "delete"}
    assert [r.timestamp for r in records] == sorted(r.timestamp for r in records)
    assert [r.lsn for r in records] == sorted(r.lsn for r in records)
    mirror: dict = {}
    for record in records:
        apply_change(mirror, record)
    assert mirror == table_as_mirror(items_table, "items")
    source.close()


@pytest.mark.parametrize("peek_messages", [cdc_source.PEEK_MESSAGES, 7])  # 7: many peeks, most of them skipped
def test_a_restore_resumes_exactly_after_the_snapshot_and_the_slot_moves_only_when_one_completes(
        items_table, peek_messages, monkeypatch):
    monkeypatch.setattr(cdc_source, "PEEK_MESSAGES", peek_messages)
    random_changes(items_table, 20, seed=2)
    first = start(cdc(items_table), guarantee=AT_LEAST_ONCE, vertex="cdc")
    before_any = confirmed_lsn(items_table)
    mirror: dict = {}
    for record in drain(first):
        apply_change(mirror, record)
    assert mirror == table_as_mirror(items_table, "items")
    entries = phase1(first)  # snapshot 1 holds the position after those changes
    assert confirmed_lsn(items_table) == before_any  # not before the snapshot completes
    first.snapshot_commit_finish(True)
    [(_, (position, _))] = entries
    assert confirmed_lsn(items_table) == position > before_any

    random_changes(items_table, 20, seed=3, first_id=1000)
    after_snapshot_1 = drain(first)  # emitted, but snapshot 2 never completes
    assert after_snapshot_1
    phase1(first)
    first.close()  # the member is lost: the slot stays where snapshot 1 put it
    assert confirmed_lsn(items_table) == position
    random_changes(items_table, 10, seed=4, first_id=2000)

    restored = start(cdc(items_table), guarantee=AT_LEAST_ONCE, vertex="cdc", restore=entries)
    replayed = drain(restored)
    assert replayed[:len(after_snapshot_1)] == after_snapshot_1  # the same changes again, from snapshot 1 on
    for record in replayed:  # onto the mirror as it was at snapshot 1
        apply_change(mirror, record)
    assert mirror == table_as_mirror(items_table, "items")
    restored.close()


def test_a_missing_slot_is_named_and_create_makes_slot_and_publication(pg_dsn):
    sql(pg_dsn, "CREATE TABLE items (id int PRIMARY KEY, name text)")
    source = Sources.postgres_cdc(pg_dsn, "absent_slot", "absent_pub", ["items"])
    with pytest.raises(PostgresError, match=r"replication slot 'absent_slot' does not exist in jet@127\.0\.0\.1:\d+/"):
        start(source.supplier, vertex="cdc")
    created = start(Sources.postgres_cdc(pg_dsn, "absent_slot", "absent_pub", ["items"], create=True).supplier,
                    vertex="cdc", guarantee=AT_LEAST_ONCE)
    sql(pg_dsn, "INSERT INTO items VALUES (1, 'one')")
    [record] = drain(created, until=lambda got: len(got) >= 1)
    assert (record.operation, record.after, record.before) == ("insert", {"id": 1, "name": "one"}, None)
    created.close()


def test_values_come_as_a_query_gives_them_with_full_before_images_and_truncates(pg_dsn):
    sql(pg_dsn, "CREATE SCHEMA shop")
    sql(pg_dsn, "CREATE TABLE shop.typed (id bigint PRIMARY KEY, at timestamptz, day date, flag boolean, "
                "doc jsonb, tags text[], amount numeric(12, 3), ratio double precision, raw bytea, note text)")
    sql(pg_dsn, "ALTER TABLE shop.typed REPLICA IDENTITY FULL")
    sql(pg_dsn, "CREATE TABLE other (id int PRIMARY KEY)")
    create_slot_and_publication(pg_dsn, "jet_slot", "jet_pub", ["shop.typed", "other"])
    sql(pg_dsn, "INSERT INTO shop.typed VALUES (1, '2026-11-27 10:00:00.123456+00', '2026-11-27', true, "
                "'{\"a\": [1, 2]}', '{x,\"y z\"}', 12.5, 0.25, '\\x00ff', NULL), (2, NULL, NULL, NULL, NULL, NULL, "
                "NULL, NULL, NULL, 'é ünïcode')")
    inserted = table_as_mirror(pg_dsn, "shop.typed")
    sql(pg_dsn, "INSERT INTO other VALUES (1)")
    sql(pg_dsn, "UPDATE shop.typed SET flag = false, note = 'changed' WHERE id = 1")
    updated = table_as_mirror(pg_dsn, "shop.typed")[1]
    sql(pg_dsn, "DELETE FROM shop.typed WHERE id = 2")
    sql(pg_dsn, "TRUNCATE shop.typed")
    source = start(Sources.postgres_cdc(pg_dsn, "jet_slot", "jet_pub", ["shop.typed"], poll_interval_ms=10).supplier,
                   guarantee=AT_LEAST_ONCE, vertex="cdc")
    records = drain(source, until=lambda got: len(got) >= 5)
    source.close()
    assert [(r.operation, r.schema, r.table) for r in records] == [
        ("insert", "shop", "typed"), ("insert", "shop", "typed"), ("update", "shop", "typed"),
        ("delete", "shop", "typed"), ("truncate", "shop", "typed")]  # not table "other"
    assert [records[0].after, records[1].after] == [inserted[1], inserted[2]]
    assert records[2].before == inserted[1] and records[2].after == updated  # REPLICA IDENTITY FULL
    assert records[3].before == inserted[2] and records[3].after is None
    assert records[0].lsn < records[2].lsn < records[3].lsn < records[4].lsn


def test_without_snapshots_the_slot_follows_what_was_emitted(items_table):
    from jet.job_config import ProcessingGuarantee
    random_changes(items_table, 10, seed=6)
    source = start(cdc(items_table), guarantee=ProcessingGuarantee.NONE, vertex="cdc")
    first = drain(source)
    assert first and confirmed_lsn(items_table) == source._position
    source.close()
    random_changes(items_table, 5, seed=7, first_id=500)
    again = start(cdc(items_table), guarantee=ProcessingGuarantee.NONE, vertex="cdc")
    later = drain(again)  # a new job on the same slot: only what came after
    again.close()
    assert later and min(r.lsn for r in later) > max(r.lsn for r in first)
