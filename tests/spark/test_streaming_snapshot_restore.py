"""A real Spark streaming query writing into a Spark stream source processor that takes
snapshots: Spark checkpoints a micro-batch only after the snapshot holding it completed, and a
micro-batch the job lost is replayed by Spark into the restored processor exactly once.

The test drives the processor as the engine would (complete() calls, the two snapshot phases,
a crash and a restore); Spark reaches it over the member's real gRPC server.
"""

from __future__ import annotations

import os
import threading
import time

from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.streaming_source import spark_stream_source
from jet.spark.stream_side import end_spark_streams, forget_stream_control, run_stream_source

from tests.spark.harness import JOB_ID, TOKEN, GrpcCluster
from tests.spark.test_streaming_dag import CSV_SCHEMA, file_rows, write_csv_file
from tests.spark.test_streaming_snapshots import snapshot, start

GUARD_S = 180.0
"""A bound on every wait, so a broken protocol fails the test instead of hanging it."""


class Driven:
    """A source processor the test drives, and what it emitted."""

    def __init__(self, processor) -> None:
        self.processor = processor
        self.out: list = []
        self.done = False

    def step(self) -> None:
        self.done = self.processor.complete()
        bucket = self.processor.outbox.buckets[0]
        self.out.extend(bucket)
        bucket.clear()

    def run_until(self, condition, what: str, spark_errors: list) -> None:
        deadline = time.monotonic() + GUARD_S
        while not condition():
            if spark_errors:
                raise spark_errors[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what}")
            self.step()
            time.sleep(0.01)

    def waiting_commits(self) -> int:
        return len(self.processor.endpoint.vertex.commits._waiting)

    def settled(self, batch: int) -> bool:
        """Whether the processor has emitted all of micro-batch ``batch`` and knows it."""
        return max(self.processor._settled_through.values(), default=-1) >= batch


def test_spark_commits_a_micro_batch_after_the_snapshot_and_replays_one_the_job_lost(spark, tmp_path):
    directory, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    directory.mkdir()
    batches = [file_rows(index, 40 + 9 * index) for index in range(2)]
    write_csv_file(directory, "part-000.csv", batches[0])
    source = spark_stream_source("csv", str(directory), schema=CSV_SCHEMA, maxFilesPerTrigger=1,
                                 checkpoint_location=str(checkpoint))
    cluster = GrpcCluster(1)
    options = JetOptions(JOB_ID, source.name, tuple(cluster.addresses), TOKEN, ready_timeout_s=GUARD_S,
                         driver_reports_failure=True)
    errors: list[BaseException] = []

    def spark_side() -> None:
        try:
            run_stream_source(spark, source.spec, options)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    def new_processor(restore=None) -> Driven:
        return Driven(start(source.supplier(), JOB_ID, restore=restore, vertex=source.name))

    thread = threading.Thread(target=spark_side, daemon=True)
    try:
        job = new_processor()
        thread.start()
        committed = lambda batch: os.path.exists(checkpoint / "commits" / str(batch))  # noqa: E731

        job.run_until(lambda: job.waiting_commits() == 1 and job.settled(0), "Spark's commit of micro-batch 0",
                      errors)
        assert sorted(job.out) == sorted(batches[0])
        assert not committed(0)  # Spark waits for the job's snapshot
        snapshot(job.processor)
        job.processor.snapshot_commit_finish(True)
        job.run_until(lambda: committed(0), "Spark to checkpoint micro-batch 0", errors)

        before_snapshot = list(job.out)
        entries = snapshot(job.processor)  # then micro-batch 1 comes, and the job is lost
        job.processor.snapshot_commit_finish(True)
        write_csv_file(directory, "part-001.csv", batches[1])
        job.run_until(lambda: job.waiting_commits() == 1, "Spark's commit of micro-batch 1", errors)
        assert sorted(job.out) == sorted(batches[0] + batches[1])
        job.processor.close()  # the member refuses the waiting commit: Spark's query fails

        restored = new_processor(restore=entries)  # the driver runs the query again: Spark replays batch 1
        restored.run_until(lambda: restored.waiting_commits() == 1 and restored.settled(1),
                           "the replayed micro-batch 1", errors)
        assert not committed(1)
        assert sorted(before_snapshot + restored.out) == sorted(batches[0] + batches[1])
        snapshot(restored.processor)
        restored.processor.snapshot_commit_finish(True)
        restored.run_until(lambda: committed(1), "Spark to checkpoint micro-batch 1", errors)

        end_spark_streams(JOB_ID)
        restored.run_until(lambda: restored.done, "the source to complete after the query ended", errors)
        thread.join(GUARD_S)
        assert not errors and not thread.is_alive()
        assert sorted(before_snapshot + restored.out) == sorted(batches[0] + batches[1])
        restored.processor.close()
    finally:
        end_spark_streams(JOB_ID)
        thread.join(GUARD_S)
        forget_stream_control(JOB_ID)
        cluster.close()


def test_a_spark_stream_into_an_exactly_once_job_that_loses_a_member_writes_every_row_once(spark, tmp_path):
    """The whole path on real members: Spark writes micro-batches into an exactly-once job whose
    JSON-lines sink is transactional; a member is killed, the job restarts from its last
    snapshot, Spark replays what the job lost. The committed lines equal the rows written."""
    import json

    import jet
    from jet.connectors import Sinks
    from jet.core import DAG, Edge

    from tests.cluster.cluster_support import wait_until

    directory, checkpoint, out = tmp_path / "in", tmp_path / "checkpoint", tmp_path / "out"
    directory.mkdir()
    batches = [file_rows(index, 300 + 11 * index) for index in range(6)]
    for index, rows in enumerate(batches[:3]):
        write_csv_file(directory, f"part-{index:03d}.csv", rows)
    source = spark_stream_source("csv", str(directory), schema=CSV_SCHEMA, maxFilesPerTrigger=1,
                                 checkpoint_location=str(checkpoint))
    sink = Sinks.jsonl(str(out))
    dag = DAG()
    spark_in = dag.new_vertex(source.name, source.supplier, 1)
    dag.edge(Edge.between(spark_in, dag.new_vertex("out", sink.supplier, 1)))
    with jet.local_cluster(members=3, log_dir=tmp_path / "logs", restart_delay_ms=100) as cluster:
        job = cluster.new_job(dag, {"processing_guarantee": "exactly-once", "snapshot_interval_ms": 300,
                                    "name": "spark-in"})
        wait_until(lambda: os.path.exists(checkpoint / "commits" / "1"), GUARD_S, "two checkpointed micro-batches")
        cluster.kill_member(2)
        for index, rows in enumerate(batches[3:], start=3):
            write_csv_file(directory, f"part-{index:03d}.csv", rows)
        wait_until(lambda: job.info()["restarts"] >= 1, GUARD_S, "the restart")
        wait_until(lambda: os.path.exists(checkpoint / "commits" / "5"), GUARD_S, "every micro-batch checkpointed")
        end_spark_streams(job.id)
        job.join(timeout=GUARD_S)
    lines = [tuple(json.loads(line)) for path in sorted(out.glob("*.jsonl")) for line in path.read_text().splitlines()]
    assert sorted(lines) == sorted(row for rows in batches for row in rows)
