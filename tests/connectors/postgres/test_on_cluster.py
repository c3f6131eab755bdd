"""The PostgreSQL sink and CDC source in jobs on a local cluster of member processes, members
SIGKILLed mid-stream; the oracles are plain Python and the tables read back directly."""

from __future__ import annotations

import threading

import pytest

import jet
from jet import Pipeline, SinkBuilder, Sinks, Sources
from jet.connectors.postgres import create_slot_and_publication
from jet.core import DAG, Edge
from jet.core.processors import map_p
from jet.snapshot import SnapshotStore
from tests.cluster.cluster_support import wait_until
from tests.cluster.snapshot_support import CheckpointedSequenceP
from tests.connectors.postgres.support import apply_to_mirror_table, prepared_gids, psycopg, sql, table_as_mirror
from tests.connectors.postgres.test_cdc import confirmed_lsn, random_changes

pytestmark = pytest.mark.slow

EXACTLY_ONCE = {"processing_guarantee": "exactly-once", "snapshot_interval_ms": 200}
TOTAL = 6000


def completed_snapshots(cluster, job_id) -> int:
    record = SnapshotStore(cluster.snapshot_store).load_job_record(job_id)
    return -1 if record.last_good_snapshot_id is None else record.last_good_snapshot_id


def numbers_into_postgres(dsn: str) -> DAG:
    """Each member's checkpointed source emits its share of 0..TOTAL-1 slowly; each member's sink
    processor writes them (plain COPY: a duplicate would show as a second row)."""
    dag = DAG()
    source = dag.new_vertex("numbers", lambda: CheckpointedSequenceP(TOTAL, 10, 0.02), 1)
    rows = dag.new_vertex("rows", map_p(lambda n: (n, f"n{n}")), 1)
    sink = dag.new_vertex("pg", Sinks.postgres(dsn, "numbers", batch_rows=100).supplier, 1)
    dag.edge(Edge.between(source, rows))
    dag.edge(Edge.between(rows, sink))
    return dag


def kill_holding_a_prepared_transaction(cluster, dsn: str, job_id: str, member: int) -> None:
    """SIGKILL ``member`` as soon as its sink processor has a transaction prepared (between phase
    1 and phase 2 of a snapshot), the window where a restore must decide: commit it if the snapshot
    completed, roll it back if not."""
    prefix = f"jet-postgres-{job_id}-pg-{member}-"  # one sink processor per member: index = member
    with psycopg.connect(dsn, autocommit=True) as connection:
        def prepared() -> bool:
            return bool(connection.execute("SELECT 1 FROM pg_prepared_xacts WHERE starts_with(gid, %s)",
                                           (prefix,)).fetchone())
        wait_until(prepared, 60, f"member {member}'s sink to prepare a transaction", interval_s=0.001)
        cluster.kill_member(member)


def test_an_exactly_once_job_losing_members_writes_every_row_once_and_leaves_nothing_prepared(pg_dsn, tmp_path):
    sql(pg_dsn, "CREATE TABLE numbers (n int, label text)")  # no key: a repeated row would stay
    with jet.local_cluster(members=3, log_dir=tmp_path, restart_delay_ms=100) as cluster:
        job = cluster.new_job(numbers_into_postgres(pg_dsn), {**EXACTLY_ONCE, "name": "pg-exactly-once"})
        wait_until(lambda: completed_snapshots(cluster, job.id) >= 1, 60, "two snapshots")
        kill_holding_a_prepared_transaction(cluster, pg_dsn, job.id, 2)
        wait_until(lambda: job.info()["restarts"] == 1, 60, "the first restart")
        restarted_at = completed_snapshots(cluster, job.id)
        wait_until(lambda: completed_snapshots(cluster, job.id) >= restarted_at + 2, 60, "snapshots after it")
        kill_holding_a_prepared_transaction(cluster, pg_dsn, job.id, 1)
        wait_until(lambda: job.info()["restarts"] == 2, 60, "the second restart")
        job.join(timeout=180)
    got = sql(pg_dsn, "SELECT n, label FROM numbers ORDER BY n")
    assert len(got) == TOTAL and got == [(n, f"n{n}") for n in range(TOTAL)]
    assert prepared_gids(pg_dsn) == []


def test_a_cdc_job_mirrors_the_table_across_a_member_kill(pg_dsn, tmp_path):
    sql(pg_dsn, "CREATE TABLE items (id int PRIMARY KEY, name text, qty int, price numeric(8, 2))")
    sql(pg_dsn, "CREATE TABLE mirror (id int PRIMARY KEY, name text, qty int, price numeric(8, 2))")
    create_slot_and_publication(pg_dsn, "jet_slot", "jet_pub", ["items"])
    start_lsn = confirmed_lsn(pg_dsn)
    dsn = pg_dsn
    mirror = (SinkBuilder.sink("mirror", lambda context: apply_to_mirror_table(dsn, "mirror"))
              .receive_fn(lambda table, record: table.apply(record))
              .destroy_fn(lambda table: table.connection.close())
              .build())
    p = Pipeline.create()
    p.read_from(Sources.postgres_cdc(dsn, "jet_slot", "jet_pub", ["items"], poll_interval_ms=20)) \
        .with_native_timestamps(0).write_to(mirror)
    writer = threading.Thread(target=random_changes, args=(dsn, 300, 5), kwargs={"pause_s": 0.01})
    with jet.local_cluster(members=2, log_dir=tmp_path, restart_delay_ms=100) as cluster:
        job = cluster.new_job(p, {**EXACTLY_ONCE, "name": "pg-cdc"})
        writer.start()
        wait_until(lambda: completed_snapshots(cluster, job.id) >= 2, 60, "three snapshots")
        cluster.kill_member(1)
        assert writer.is_alive()  # the member is lost mid-stream
        wait_until(lambda: job.info()["restarts"] == 1, 60, "the restart")
        writer.join(120)
        wait_until(lambda: table_as_mirror(dsn, "mirror") == table_as_mirror(dsn, "items"), 60,
                   "the mirror to equal the table")
        snapshot = completed_snapshots(cluster, job.id)
        wait_until(lambda: completed_snapshots(cluster, job.id) >= snapshot + 2, 60, "a snapshot after the writes")
        assert confirmed_lsn(dsn) > start_lsn  # the slot follows the completed snapshots
        job.cancel()
    assert len(table_as_mirror(dsn, "items")) > 50
