"""The Spark stream processors through the snapshot phases, driven directly (no SparkSession).

A source processor gets the frames Spark writer tasks would send and the commits the Spark
driver would; a sink processor's endpoint is read the way a Spark stream reader reads it. A
crash is a processor closed without finishing and a new one restored from the entries of the
last snapshot; the oracle is the plain list of rows (items) that must arrive exactly once.
"""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest
from jet.cluster.links.packets import FrameType
from jet.connectors.spark import protocol as p
from jet.connectors.spark.stream_endpoints import JOB_RESTARTED
from jet.connectors.spark.streaming_sink import SparkStreamSinkP
from jet.connectors.spark.streaming_source import SparkStreamSourceP
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.job_config import ProcessingGuarantee

EXACTLY_ONCE = ProcessingGuarantee.EXACTLY_ONCE
QUERY = "query-1"
_jobs = itertools.count()


def new_job() -> str:
    return f"snapshot-test-{next(_jobs)}"


def start(processor, job: str, index: int = 0, parallelism: int = 1, guarantee=EXACTLY_ONCE,
          restore: list | None = None, vertex: str = "spark"):
    processor.init(Outbox(1, 1000), Context(vertex_name=vertex, job_id=job, local_index=index,
                                            local_parallelism=parallelism, processing_guarantee=guarantee))
    if restore is not None:
        inbox = Inbox()
        inbox.add_chunk(list(restore))
        processor.restore_from_snapshot(inbox)
        assert inbox.is_empty() and processor.finish_snapshot_restore()
    return processor


def snapshot(processor) -> list:
    """Phase 1 on this processor; the entries it saved."""
    assert processor.save_to_snapshot() and processor.snapshot_commit_prepare()
    entries, processor.outbox.snapshot_entries = processor.outbox.snapshot_entries, []
    return entries


# -- the source: Spark -> Jet ---------------------------------------------------------------------
def rows_of(batch: int, part: int, count: int) -> list:
    return [(batch, part, i) for i in range(count)]


def send(processor, batch: int, part: int, rows: list, start: int = 0, peer: int = -7) -> None:
    """A frame of Spark partition ``part`` of micro-batch ``batch``, its rows from ``start``."""
    header = {"op": p.ROWS, "query": QUERY, "batch": batch, "part": part, "start": start, "n": len(rows),
              "fmt": p.ARROW, "row_type": "tuple"}
    columns = [pa.array(list(column), pa.int64()) for column in zip(*rows)] or [pa.array([], pa.int64())] * 3
    arrow_rows = pa.RecordBatch.from_arrays(columns, names=["batch", "part", "i"])
    frame, _ = p.encode_sized(FrameType.SPARK_REQUEST, header, p.to_ipc(arrow_rows.schema, [arrow_rows]))
    decoded, offset = p.decode_header(frame)
    processor.endpoint.enqueue(peer, decoded, frame, offset, 100_000_000)


def emitted(processor) -> list:
    """Run complete() until the frames are taken; what it emitted."""
    out = []
    for _ in range(100):
        processor.complete()
        out.extend(processor.outbox.buckets[0])
        processor.outbox.buckets[0] = []
        if not processor.endpoint.frames and processor._chunk is None:
            return out
    raise AssertionError("the source did not take its frames")


class SparkCommit:
    """A micro-batch commit as the hub receives it, and what the member answers."""

    def __init__(self, processor, batch: int, counts: dict[int, int]) -> None:
        self.answer: str | None = None
        vertex = processor.endpoint.vertex
        vertex.commits.add(QUERY, batch, counts)
        vertex.commits.acknowledge_when_durable(QUERY, batch, list(vertex.processors),
                                                lambda: self._set("ok"), self._set)

    def _set(self, answer: str) -> None:
        assert self.answer is None, "answered twice"
        self.answer = answer


def test_a_micro_batch_commit_is_acknowledged_only_after_the_snapshot_that_holds_it():
    source = start(SparkStreamSourceP(), new_job())
    send(source, 0, 0, rows_of(0, 0, 5))
    send(source, 0, 1, rows_of(0, 1, 3))
    assert sorted(emitted(source)) == sorted(rows_of(0, 0, 5) + rows_of(0, 1, 3))
    commit = SparkCommit(source, 0, {0: 5, 1: 3})
    emitted(source)  # settles the batch
    snapshot(source)
    assert commit.answer is None  # phase 1 alone does not make it durable
    source.snapshot_commit_finish(False)
    assert commit.answer is None
    snapshot(source)
    source.snapshot_commit_finish(True)
    assert commit.answer == "ok"
    source.close()


def test_without_snapshots_a_commit_is_acknowledged_at_once():
    source = start(SparkStreamSourceP(), new_job(), guarantee=ProcessingGuarantee.NONE)
    assert SparkCommit(source, 0, {0: 0}).answer == "ok"
    source.close()


def test_a_restored_source_drops_what_its_snapshot_has_and_emits_the_rest_of_a_replayed_batch():
    job = new_job()
    source = start(SparkStreamSourceP(), job)
    out = []
    send(source, 0, 0, rows_of(0, 0, 10))
    out += emitted(source)
    first = SparkCommit(source, 0, {0: 10})
    emitted(source)
    snapshot(source)
    source.snapshot_commit_finish(True)
    assert first.answer == "ok"

    send(source, 1, 0, rows_of(1, 0, 10)[:4])
    out += emitted(source)
    entries = snapshot(source)  # holds batch 0 settled and 4 rows of batch 1
    source.snapshot_commit_finish(True)
    send(source, 1, 0, rows_of(1, 0, 10)[4:], start=4)
    lost = emitted(source)  # after the snapshot: the restored job does not have these
    second = SparkCommit(source, 1, {0: 10})
    emitted(source)
    assert second.answer is None
    source.close()  # the job restarts before a snapshot holds batch 1
    assert second.answer.startswith(JOB_RESTARTED)
    assert lost == rows_of(1, 0, 10)[4:]

    restored = start(SparkStreamSourceP(), job, restore=entries)
    send(restored, 0, 0, rows_of(0, 0, 10))  # a late attempt of the committed batch: dropped
    send(restored, 1, 0, rows_of(1, 0, 10))  # Spark replays the batch it could not commit
    out += emitted(restored)
    assert out == rows_of(0, 0, 10) + rows_of(1, 0, 10)
    replayed = SparkCommit(restored, 1, {0: 10})
    emitted(restored)
    snapshot(restored)
    restored.snapshot_commit_finish(True)
    assert replayed.answer == "ok"
    restored.close()


def test_a_source_restored_on_fewer_processors_takes_every_partition_exactly_once():
    job = new_job()
    counts = {0: 6, 1: 5, 2: 4, 3: 7}
    sources = [start(SparkStreamSourceP(), job, index=i, parallelism=2) for i in range(2)]
    out = []
    for part, count in counts.items():  # partition q goes to processor q % 2
        rows = rows_of(0, part, count)
        send(sources[part % 2], 0, part, rows if part != 3 else rows[:2])
    for source in sources:
        out += emitted(source)
    SparkCommit(sources[0], 0, counts)
    for source in sources:
        emitted(source)  # processor 0 settles batch 0, processor 1 still waits for partition 3
    entries = [entry for source in sources for entry in snapshot(source)]
    for source in sources:
        source.close()

    restored = start(SparkStreamSourceP(), job, index=0, parallelism=1, restore=entries)
    for part, count in counts.items():  # Spark replays the whole batch
        send(restored, 0, part, rows_of(0, part, count))
    out += emitted(restored)
    assert sorted(out) == sorted(row for part, count in counts.items() for row in rows_of(0, part, count))
    commit = SparkCommit(restored, 0, counts)
    emitted(restored)
    snapshot(restored)
    restored.snapshot_commit_finish(True)
    assert commit.answer == "ok"
    restored.close()


# -- the sink: Jet -> Spark -----------------------------------------------------------------------
def feed(sink, items: list) -> None:
    inbox = Inbox()
    inbox.add_chunk(list(items))
    sink.process(0, inbox)
    assert inbox.is_empty()


def spark_reads(sink, start: int) -> tuple[list, int]:
    """What a Spark micro-batch reads from ``start``: every visible item; and the new end."""
    end = sink.endpoint.state()[0]
    return (sink.endpoint.fetch(start, end, 1_000_000) if end > start else []), end


def test_spark_sees_only_items_a_completed_snapshot_holds():
    sink = start(SparkStreamSinkP(), new_job())
    feed(sink, range(10))
    assert spark_reads(sink, 0) == ([], 0)
    with pytest.raises(ValueError, match=r"positions \[0, 5\) .* are not buffered"):
        sink.endpoint.fetch(0, 5, 100)
    snapshot(sink)
    feed(sink, range(10, 15))  # after the barrier
    assert spark_reads(sink, 0) == ([], 0)
    sink.snapshot_commit_finish(True)
    assert spark_reads(sink, 0) == (list(range(10)), 10)
    assert sink.endpoint.state()[2] is False  # not done: more items wait for a snapshot
    sink.complete()  # the input ended: no snapshot follows, everything is Spark's to read
    assert spark_reads(sink, 10) == (list(range(10, 15)), 15)
    assert sink.endpoint.state()[2] is True
    sink.close()


def test_a_restored_sink_gives_spark_every_item_exactly_once():
    job, items = new_job(), list(range(100))
    sink = start(SparkStreamSinkP(), job)
    read: list = []
    feed(sink, items[:30])
    snapshot(sink)
    sink.snapshot_commit_finish(True)
    batch, position = spark_reads(sink, 0)
    read += batch
    sink.endpoint.trim(20)  # Spark committed a part of what it read
    feed(sink, items[30:50])
    entries = snapshot(sink)  # holds positions [20, 50)
    sink.snapshot_commit_finish(True)
    feed(sink, items[50:60])  # emitted after the snapshot: lost with the crash
    batch, position = spark_reads(sink, position)
    read += batch
    sink.close()

    restored = start(SparkStreamSinkP(), job, restore=entries)
    feed(restored, items[50:])  # the restored job emits again what followed the snapshot
    batch, position = spark_reads(restored, position)
    assert (batch, position) == ([], 50)  # nothing new is in a snapshot yet
    snapshot(restored)
    restored.snapshot_commit_finish(True)
    batch, position = spark_reads(restored, position)
    read += batch
    assert read == items
    restored.close()


def test_a_sink_restored_on_fewer_processors_keeps_the_lost_processors_items():
    job = new_job()
    sinks = [start(SparkStreamSinkP(), job, index=i, parallelism=2) for i in range(2)]
    feed(sinks[0], ["a", "b"])
    feed(sinks[1], ["c", "d", "e"])
    entries = [entry for sink in sinks for entry in snapshot(sink)]
    for sink in sinks:
        sink.close()
    restored = start(SparkStreamSinkP(), job, index=0, parallelism=1, restore=entries)
    assert spark_reads(restored, 0) == (["a", "b", "c", "d", "e"], 5)
    restored.close()


def test_a_full_buffer_of_items_waiting_for_a_snapshot_still_takes_input():
    sink = SparkStreamSinkP(buffer_items=4)
    start(sink, new_job())
    feed(sink, range(10))  # were these refused, the snapshot barrier behind them could never come
    feed(sink, range(10, 12))
    assert sink.endpoint.appended == 12
