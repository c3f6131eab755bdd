"""File sinks through the two snapshot phases, driven directly as the engine drives them.

Each test compares the committed files with a plain-Python oracle of the lines that should be
there exactly once; a crash is a processor abandoned without ``close()`` and a new instance
restored from the entries the last snapshot holds.
"""

from __future__ import annotations

import glob
import json
import logging
import os

from jet import Sinks
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.job_config import ProcessingGuarantee

EXACTLY_ONCE, AT_LEAST_ONCE = ProcessingGuarantee.EXACTLY_ONCE, ProcessingGuarantee.AT_LEAST_ONCE



def restore_into(processor, entries) -> None:
    """Restore ``processor`` from a snapshot's ``entries`` as the engine does: one inbox, then
    ``finish_snapshot_restore``."""
    inbox = Inbox()
    inbox.add_chunk(list(entries))
    processor.restore_from_snapshot(inbox)
    assert inbox.is_empty()
    assert processor.finish_snapshot_restore() is True

def start(sink, index: int = 0, parallelism: int = 1, guarantee=EXACTLY_ONCE, restore: list | None = None):
    """A sink processor initialised as processor ``index`` of ``parallelism``, restored from
    ``restore`` (the entries of a snapshot) when given."""
    processor = sink.supplier()
    processor.init(Outbox(0), Context(vertex_name="sink", local_index=index, local_parallelism=parallelism,
                                      processing_guarantee=guarantee))
    if restore is not None:
        restore_into(processor, restore)
    return processor


def feed(processor, items: list) -> None:
    inbox = Inbox()
    inbox.add_chunk(list(items))
    processor.process(0, inbox)
    assert inbox.is_empty()


def phase1(processor) -> list:
    """save_to_snapshot and snapshot_commit_prepare; the entries they saved."""
    assert processor.save_to_snapshot() is True
    assert processor.snapshot_commit_prepare() is True
    entries, processor.outbox.snapshot_entries = processor.outbox.snapshot_entries, []
    return entries


def committed_lines(directory) -> list:
    """Every line a reader globbing the final names sees, parsed."""
    return [json.loads(line) for path in sorted(glob.glob(os.path.join(directory, "*.jsonl")))
            for line in open(path, encoding="utf-8").read().splitlines()]


def sequence(name: str) -> int:
    """The sequence in ``part-<index>-<sequence>.jsonl`` (or its in-progress name)."""
    return int(name.split("-")[2][:5])


def visible(directory) -> list[str]:
    return sorted(os.path.basename(path) for path in glob.glob(os.path.join(directory, "*")))


def in_progress(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def test_nothing_is_visible_before_phase_2_and_everything_exactly_once_after(tmp_path):
    items = [{"n": n} for n in range(50)]
    sink = start(Sinks.jsonl(str(tmp_path)))
    feed(sink, items[:30])
    feed(sink, items[30:])
    assert visible(tmp_path) == []
    entries = phase1(sink)
    assert visible(tmp_path) == [] and committed_lines(tmp_path) == []
    assert len([key for key, _ in entries if key.key[0] == "file-txn"]) == 1
    assert sink.snapshot_commit_finish(True) is True
    assert committed_lines(tmp_path) == items
    assert visible(tmp_path) == ["part-00000-00000.jsonl"]
    assert in_progress(tmp_path) == []
    sink.close()


def test_a_restore_commits_the_prepared_files_and_removes_what_no_snapshot_covers(tmp_path):
    items = list(range(100))
    sink = start(Sinks.jsonl(str(tmp_path), max_file_bytes=40))
    feed(sink, items[:60])
    entries = phase1(sink)  # the snapshot covers items[:60] ...
    feed(sink, items[60:80])  # ... not these: the crash comes before phase 2
    assert committed_lines(tmp_path) == [] and in_progress(tmp_path)
    before_crash = {sequence(name) for name in in_progress(tmp_path)}

    restored = start(Sinks.jsonl(str(tmp_path), max_file_bytes=40), restore=entries)
    assert committed_lines(tmp_path) == items[:60]
    assert in_progress(tmp_path) == []  # the files of items[60:80] are gone: the source replays them
    feed(restored, items[60:])  # the restored source replays from the snapshot
    assert restored.complete() is True
    restored.close()
    assert committed_lines(tmp_path) == items
    prepared = {value for key, value in entries if key.key[0] == "file-txn"}
    new_files = [name for name in visible(tmp_path) if name not in prepared]
    assert new_files and min(map(sequence, new_files)) > max(before_crash)  # no name is used twice

def test_a_restore_into_fewer_processors_still_commits_every_prepared_file(tmp_path):
    items = list(range(90))
    shares = [items[i::3] for i in range(3)]
    sinks = [start(Sinks.jsonl(str(tmp_path)), index=i, parallelism=3) for i in range(3)]
    for sink, share in zip(sinks, shares):
        feed(sink, share[:20])
    entries = [entry for sink in sinks for entry in phase1(sink)]  # the whole vertex's snapshot
    for sink, share in zip(sinks, shares):
        feed(sink, share[20:25])  # uncovered, then every member is lost
    assert committed_lines(tmp_path) == []

    # every processor of the vertex receives every broadcast entry
    survivors = [start(Sinks.jsonl(str(tmp_path)), index=i, parallelism=2, restore=entries) for i in range(2)]
    assert sorted(committed_lines(tmp_path)) == sorted(x for share in shares for x in share[:20])
    assert in_progress(tmp_path) == []  # index 2's uncovered file went with processor 0
    rest = [x for share in shares for x in share[20:]]
    feed(survivors[0], rest[::2])
    feed(survivors[1], rest[1::2])
    for survivor in survivors:
        survivor.complete()
        survivor.close()
    assert sorted(committed_lines(tmp_path)) == items


def test_a_failed_snapshot_keeps_its_files_for_the_next_one(tmp_path):
    sink = start(Sinks.jsonl(str(tmp_path)))
    feed(sink, ["a", "b"])
    phase1(sink)
    sink.snapshot_commit_finish(False)
    assert committed_lines(tmp_path) == []
    feed(sink, ["c"])
    entries = phase1(sink)
    assert sorted(value for key, value in entries if key.key[0] == "file-txn") == [
        "part-00000-00000.jsonl", "part-00000-00001.jsonl"]
    sink.snapshot_commit_finish(True)
    assert committed_lines(tmp_path) == ["a", "b", "c"]
    sink.close()


def test_files_rolled_between_the_phases_wait_for_the_next_snapshot(tmp_path):
    sink = start(Sinks.jsonl(str(tmp_path), max_file_bytes=8))
    feed(sink, ["a", "b"])
    phase1(sink)
    feed(sink, ["c", "d", "e"])  # rolls: files finished after phase 1
    sink.snapshot_commit_finish(True)
    assert committed_lines(tmp_path) == ["a", "b"]
    phase1(sink)
    sink.snapshot_commit_finish(True)
    assert committed_lines(tmp_path) == ["a", "b", "c", "d", "e"]
    sink.close()


def test_a_batch_job_commits_what_remains_when_the_sink_completes(tmp_path):
    sink = start(Sinks.files(str(tmp_path)))
    feed(sink, [1, 2])
    phase1(sink)
    sink.snapshot_commit_finish(True)
    feed(sink, [3])
    assert sink.complete() is True
    sink.close()
    assert visible(tmp_path) == ["part-00000-00000", "part-00000-00001"]
    assert [(tmp_path / name).read_text() for name in visible(tmp_path)] == ["1\n2\n", "3\n"]


def test_a_closed_sink_removes_its_unprepared_file_and_keeps_prepared_ones(tmp_path):
    sink = start(Sinks.jsonl(str(tmp_path)))
    feed(sink, ["kept"])
    entries = phase1(sink)
    feed(sink, ["dropped"])
    sink.close()  # the job failed before phase 2
    assert in_progress(tmp_path) == [".part-00000-00000.jsonl.tmp"]
    restored = start(Sinks.jsonl(str(tmp_path)), restore=entries)
    restored.close()
    assert committed_lines(tmp_path) == ["kept"]


def test_a_prepared_file_that_vanished_is_reported(tmp_path, caplog):
    sink = start(Sinks.jsonl(str(tmp_path)))
    feed(sink, ["x"])
    entries = phase1(sink)
    os.remove(tmp_path / ".part-00000-00000.jsonl.tmp")
    with caplog.at_level(logging.WARNING):
        start(Sinks.jsonl(str(tmp_path)), restore=entries).close()
    assert "part-00000-00000.jsonl" in caplog.text and "lost" in caplog.text


def test_a_restore_after_phase_2_ran_commits_nothing_twice(tmp_path):
    sink = start(Sinks.jsonl(str(tmp_path)))
    feed(sink, ["x", "y"])
    entries = phase1(sink)
    sink.snapshot_commit_finish(True)  # then the member is lost before the next snapshot
    restored = start(Sinks.jsonl(str(tmp_path)), restore=entries)
    feed(restored, ["z"])
    restored.complete()
    restored.close()
    assert committed_lines(tmp_path) == ["x", "y", "z"]


def test_at_least_once_writes_directly_and_a_restored_sink_keeps_what_it_wrote(tmp_path):
    sink = start(Sinks.jsonl(str(tmp_path)), guarantee=AT_LEAST_ONCE)
    feed(sink, ["a", "b"])
    entries = phase1(sink)
    assert committed_lines(tmp_path) == ["a", "b"]  # flushed in phase 1
    feed(sink, ["c"])
    sink.close()
    restored = start(Sinks.jsonl(str(tmp_path)), guarantee=AT_LEAST_ONCE, restore=entries)
    feed(restored, ["c", "d"])  # replayed from the snapshot: "c" may appear twice, nothing is lost
    restored.complete()
    restored.close()
    assert committed_lines(tmp_path) == ["a", "b", "c", "c", "d"]
    assert visible(tmp_path) == ["part-00000.jsonl"]


# -- on real members ------------------------------------------------------------------------------
def test_a_job_that_loses_a_member_commits_every_line_exactly_once(tmp_path):
    """Three member processes write a counting job's numbers into one directory under
    exactly-once; a member is killed mid-job and the job restarts from its last snapshot."""
    import jet
    from jet.core import DAG, Edge
    from jet.snapshot import SnapshotStore

    from tests.cluster.cluster_support import wait_until
    from tests.cluster.snapshot_support import CheckpointedSequenceP

    total, out = 4000, tmp_path / "out"
    dag = DAG()
    numbers = dag.new_vertex("numbers", lambda: CheckpointedSequenceP(total, 10, 0.02), 1)
    sink = Sinks.jsonl(str(out))
    dag.edge(Edge.between(numbers, dag.new_vertex("out", sink.supplier, 1)))
    with jet.local_cluster(members=3, log_dir=tmp_path / "logs", restart_delay_ms=100) as cluster:
        job = cluster.new_job(dag, {"processing_guarantee": "exactly-once", "snapshot_interval_ms": 200,
                                    "name": "files"})
        store = SnapshotStore(cluster.snapshot_store)
        wait_until(lambda: store.load_job_record(job.id).last_good_snapshot_id >= 1, what="two snapshots")
        seen = committed_lines(out)
        assert len(seen) == len(set(seen)) and set(seen) <= set(range(total))
        cluster.kill_member(2)
        wait_until(lambda: job.info()["restarts"] == 1, what="the restart")
        job.join(timeout=120)
    lines = committed_lines(out)
    assert sorted(lines) == list(range(total))  # no line lost, none twice
    assert in_progress(out) == []
