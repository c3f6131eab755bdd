"""File sinks on streams: rolling files by size and flushing while the job runs."""

from __future__ import annotations

import json
import os

import pytest

from jet import Sinks
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.special_items import Watermark
from jet.core.test_support import TestSupport


def written(directory) -> dict[str, str]:
    return {name: (directory / name).read_text(encoding="utf-8") for name in sorted(os.listdir(directory))}


def test_a_rolling_file_sink_starts_a_new_file_when_the_next_line_would_cross_the_limit(tmp_path):
    items = [f"line {i:02d} {'é' * (i % 3)}" for i in range(40)]
    sink = Sinks.files(str(tmp_path), max_file_bytes=64)
    # Snapshots off until the file sink saves its state (the sinks' part of issue 12).
    TestSupport.verify_processor(sink.supplier).input(items[:20] + [Watermark(5)] + items[20:]) \
        .disable_snapshots().expect_output([])
    files = written(tmp_path)  # the harness's second run wrote the same files again
    assert list(files) == [f"part-00000-{n:05d}" for n in range(len(files))]
    assert "".join(files.values()) == "".join(f"{item}\n" for item in items)
    sizes = [len(text.encode("utf-8")) for text in files.values()]
    assert all(size <= 64 for size in sizes)
    # a file is only closed when the next line does not fit in it
    lines = [text.splitlines(keepends=True) for text in files.values()]
    assert all(size + len(following[0].encode("utf-8")) > 64 for size, following in zip(sizes, lines[1:]))


def test_a_line_longer_than_the_limit_gets_a_file_of_its_own(tmp_path):
    sink = Sinks.jsonl(str(tmp_path), max_file_bytes=10)
    TestSupport.verify_processor(sink.supplier).input(["x" * 30, "a", "b"]).disable_snapshots() \
        .expect_output([])
    files = written(tmp_path)
    assert list(files) == ["part-00000-00000.jsonl", "part-00000-00001.jsonl"]
    assert [json.loads(line) for text in files.values() for line in text.splitlines()] == ["x" * 30, "a", "b"]


def test_without_a_limit_the_sink_writes_one_file_as_before(tmp_path):
    TestSupport.verify_processor(Sinks.files(str(tmp_path)).supplier).input([1, 2, 3]).disable_snapshots() \
        .expect_output([])
    assert written(tmp_path) == {"part-00000": "1\n2\n3\n"}


def test_what_a_file_sink_wrote_is_readable_at_a_watermark_before_the_job_ends(tmp_path):
    sink = Sinks.jsonl(str(tmp_path))
    processor = sink.supplier()
    processor.init(Outbox(0), Context())
    inbox = Inbox()
    inbox.add_chunk([{"a": 1}, (2, "b")])
    processor.process(0, inbox)
    assert processor.try_process_watermark(Watermark(100)) is True
    assert (tmp_path / "part-00000.jsonl").read_text() == '{"a": 1}\n[2, "b"]\n'
    processor.close()


def test_a_bad_size_limit_is_refused():
    with pytest.raises(ValueError, match="max_file_bytes must be None .* or an int >= 1, got 0"):
        Sinks.files("out", max_file_bytes=0)
