"""Sources save their positions: read partly, snapshot, restore into another parallelism, and
every line, row, item or sequence is emitted exactly once."""

from __future__ import annotations

import csv
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jet import SourceBuilder
from jet.connectors.file_sources import CsvSourceP, LinesSourceP, parse_json_lines
from jet.connectors.stream_sources import FileWatcherP, ItemStreamP
from jet.core.processors import items_source_p
from jet.core.test_support import TestSupport
from tests.core.snapshot_driver import Driven, context_of, restore_all
from tests.core.stream_driver import FakeClock

COUNTS = st.sampled_from([(2, 3), (3, 2), (1, 2), (2, 1), (3, 3)])
LINES = st.lists(st.text("abé xyz", min_size=0, max_size=12), min_size=0, max_size=30)


def read_restored(supplier, counts, calls, capacity):
    """counts[0] processors make ``calls`` complete() calls each, a snapshot is restored into
    counts[1] processors that run to the end: everything emitted, in one list."""
    old = [Driven(supplier, context_of(i, counts[0]), capacity) for i in range(counts[0])]
    for driven in old:
        driven.complete(calls)
    new = restore_all(supplier, [driven.save() for driven in old], counts[1])
    for driven in new:
        driven.complete()
    return [item for driven in old + new for item in driven.output]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(LINES, min_size=1, max_size=3), COUNTS, st.integers(0, 4), st.integers(1, 5),
       st.booleans())
def test_line_files_read_partly_and_restored_into_another_parallelism_give_every_line_once(
        tmp_path, files, counts, calls, capacity, crlf):
    directory = tmp_path / f"lines-{os.urandom(4).hex()}"
    directory.mkdir()
    expected = []
    for n, lines in enumerate(files):
        ending = "\r\n" if crlf else "\n"
        (directory / f"part-{n}.txt").write_bytes("".join(f"{line}{ending}" for line in lines).encode())
        expected.extend(lines)
    supplier = lambda: LinesSourceP(str(directory / "*.txt"), "Sources.files", None)  # noqa: E731
    # ``capacity`` small: a block is emitted over several calls, so snapshots fall inside blocks
    output = read_restored(supplier, counts, calls, capacity)
    assert sorted(output) == sorted(expected)


def test_json_lines_with_blank_lines_restore_by_byte_offset(tmp_path):
    records = [{"n": n, "text": "é" * (n % 4)} for n in range(200)]
    text = "".join(json.dumps(r) + ("\n\n" if r["n"] % 7 == 0 else "\n") for r in records)
    (tmp_path / "a.jsonl").write_text(text, encoding="utf-8")
    supplier = lambda: LinesSourceP(str(tmp_path / "*.jsonl"), "Sources.jsonl", parse_json_lines)  # noqa: E731
    output = read_restored(supplier, (3, 2), 1, 1 << 20)
    assert sorted(output, key=lambda r: r["n"]) == records


def test_a_line_source_in_the_harness_with_snapshots(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.txt").write_text("four\nfive")
    TestSupport.verify_processor(lambda: LinesSourceP(str(tmp_path / "*.txt"), "Sources.files", None)) \
        .expect_output(["one", "two", "three", "four", "five"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 30), min_size=1, max_size=4), COUNTS, st.integers(0, 3))
def test_csv_files_restored_into_another_parallelism_give_every_row_once(tmp_path, sizes, counts, calls):
    directory = tmp_path / f"csv-{os.urandom(4).hex()}"
    directory.mkdir()
    expected = []
    for n, size in enumerate(sizes):
        with open(directory / f"f{n}.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["file", "row"])
            for row in range(size):
                writer.writerow([n, f"{row}\nsecond line"])
                expected.append({"file": str(n), "row": f"{row}\nsecond line"})
    output = read_restored(lambda: CsvSourceP(str(directory / "*.csv")), counts, calls, 2)
    assert sorted(map(repr, output)) == sorted(map(repr, expected))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 40), COUNTS, st.integers(0, 5), st.integers(1, 4))
def test_items_source_restored_into_another_parallelism_gives_every_item_once(n, counts, calls, capacity):
    items = list(range(n))
    output = read_restored(items_source_p(items), counts, calls, capacity)
    assert sorted(output) == items


def test_items_source_in_the_harness_with_snapshots():
    TestSupport.verify_processor(items_source_p(range(10))) \
        .context(local_index=1, local_parallelism=2, member_index=1, member_count=2).expect_output([3, 7])


@pytest.mark.parametrize("counts", [(2, 3), (3, 2), (2, 2)])
def test_item_stream_goes_on_with_its_sequence_after_a_restore(counts):
    clock = FakeClock(10_000)
    supplier = lambda: ItemStreamP(1000, None, None, chunk_limit=3, clock_ms=clock)  # noqa: E731
    old = [Driven(supplier, context_of(i, counts[0])) for i in range(counts[0])]
    for step, driven in enumerate(old):  # processors get to different points
        driven.complete(1)
        clock.now_ms += 5 + 3 * step
        driven.complete(1 + step)
    saved = [driven.save() for driven in old]
    clock.now_ms = 50_000
    new = restore_all(supplier, saved, counts[1])
    for driven in new:
        driven.complete(1)  # the sequences no processor had emitted come first, all due now
    clock.now_ms += 20
    for driven in new:
        driven.complete(5)
    emitted = [event.sequence for driven in old + new for event in driven.output]
    assert len(emitted) == len(set(emitted)), "a sequence was emitted twice"
    top = max(emitted)
    missing = set(range(top + 1)) - set(emitted)
    assert all(seq > top - 3 * counts[1] for seq in missing), f"sequences skipped: {sorted(missing)}"
    restarted = [event for driven in new for event in driven.output]
    assert min(event.timestamp for event in restarted) >= 50_000 - 1000  # timestamps restart from now


def test_file_watcher_goes_on_from_the_saved_offset_and_reads_new_files_whole(tmp_path):
    (tmp_path / "a.log").write_text("old line\n")
    supplier = lambda: FileWatcherP(str(tmp_path), "*.log", "utf-8", True, poll_interval_s=0)  # noqa: E731
    watcher = Driven(supplier, context_of(0, 1))
    with open(tmp_path / "a.log", "a") as handle:
        handle.write("one\ntwo\nthr")
    watcher.complete(2)
    assert watcher.output == ["one", "two"]
    saved = watcher.save()
    with open(tmp_path / "a.log", "a") as handle:
        handle.write("ee\nfour\n")
    (tmp_path / "b.log").write_text("new file\n")
    restored = restore_all(supplier, [saved], 2)
    for driven in restored:
        driven.complete(2)
    assert sorted(line for driven in restored for line in driven.output) == ["four", "new file", "three"]


class Numbers:
    """A SourceBuilder state: hands out its share of range(total), ``per_fill`` at a time."""

    def __init__(self, context, total: int, per_fill: int = 3) -> None:
        self.index, self.count = context.global_index, context.total_parallelism
        self.pending = list(range(self.index, total, self.count))
        self.per_fill = per_fill

    def fill(self, buffer) -> None:
        taken, self.pending = self.pending[:self.per_fill], self.pending[self.per_fill:]
        for n in taken:
            buffer.add(n)
        if not self.pending:
            buffer.close()

    def restore(self, saved: list[list[int]]) -> None:
        # every processor gets every processor's snapshot and keeps its share
        self.pending = sorted(n for pending in saved for n in pending if n % self.count == self.index)


def counter_source(total: int, distributed: int = 0):
    builder = (SourceBuilder.stream("numbers", lambda ctx: Numbers(ctx, total))
               .fill_buffer_fn(lambda state, buffer: state.fill(buffer))
               .create_snapshot_fn(lambda state: list(state.pending))
               .restore_snapshot_fn(lambda state, saved: state.restore(saved)))
    return (builder.distributed(distributed) if distributed else builder).build()


def test_source_builder_snapshot_functions_in_the_harness():
    TestSupport.verify_processor(counter_source(20).supplier).expect_output(list(range(20)))


@pytest.mark.parametrize("counts", [(2, 3), (3, 2)])
def test_source_builder_stream_restored_into_another_parallelism_emits_every_item_once(counts):
    supplier = counter_source(50, distributed=1).supplier
    output = read_restored(supplier, counts, 2, 2)
    assert sorted(output) == list(range(50))
