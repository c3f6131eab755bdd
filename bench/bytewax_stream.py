"""The stream latency benchmark's definition as a Bytewax 0.21 dataflow.

A generator input at a fixed rate (one partition per process, event time = due time), key =
sequence % 100, a 1 s `TumblingWindower` with an `EventClock` waiting 50 ms, `count_window`, and
a sink that records each result's wall-clock receive time. Run by stream_latency_bench.py as

    STREAM_RATE=100000 STREAM_PARTITIONS=2 STREAM_OUT_DIR=... STREAM_START_FILE=... \\
        python -m bytewax.run bytewax_stream:flow -i <i> -a "<addr0>;<addr1>"
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Iterable

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.operators.windowing import EventClock, TumblingWindower, count_window
from bytewax.outputs import DynamicSink, StatelessSinkPartition

from stream_records import GENERATOR_REPORT_PERIOD_MS, PacedSequence, RecordWriter, now_ms, shared_start_ms

KEYS = 100
WINDOW_MS = 1000
ALLOWED_LAG_MS = 50
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
KEY_NAMES = [str(key) for key in range(KEYS)]  # Bytewax keys are strings


class _PacedPartition(StatefulSourcePartition):
    """Emits ``(key, due datetime)`` for the sequences of one partition as they come due."""

    def __init__(self, sequence: PacedSequence, records: RecordWriter) -> None:
        self._sequence = sequence
        self._records = records
        self._reported_ms = 0.0

    def next_batch(self) -> list[tuple[str, datetime]]:
        wall = now_ms()
        due_ms = self._sequence.due_ms
        batch = [(KEY_NAMES[seq % KEYS], EPOCH + timedelta(milliseconds=due_ms(seq)))
                 for seq in self._sequence.take_due(wall)]
        if wall - self._reported_ms >= GENERATOR_REPORT_PERIOD_MS:
            self._records.generator(self._sequence.due_ms(self._sequence.next_sequence), self._sequence.emitted)
            self._reported_ms = wall
        return batch

    def next_awake(self) -> datetime | None:
        next_due = self._sequence.due_ms(self._sequence.next_sequence)
        return None if next_due <= now_ms() else EPOCH + timedelta(milliseconds=next_due)

    def snapshot(self) -> None:
        return None


class PacedSource(FixedPartitionedSource):
    """``rate`` events per second over ``partitions`` partitions (one per process)."""

    def __init__(self, rate: int, partitions: int, start_file: str, out_dir: str) -> None:
        self._rate, self._partitions = rate, partitions
        self._start_file, self._out_dir = start_file, out_dir

    def list_parts(self) -> list[str]:
        return [str(index) for index in range(self._partitions)]

    def build_part(self, step_id: str, for_part: str, resume_state: None) -> _PacedPartition:
        start = shared_start_ms(self._start_file)
        sequence = PacedSequence(self._rate, start, int(for_part), self._partitions)
        return _PacedPartition(sequence, RecordWriter(self._out_dir, "bytewax-source"))


class _RecordingPartition(StatelessSinkPartition):
    def __init__(self, records: RecordWriter) -> None:
        self._records = records

    def write_batch(self, items: list[tuple[str, tuple[int, int]]]) -> None:
        self._records.results(((window_id + 1) * WINDOW_MS, key, count) for key, (window_id, count) in items)


class RecordingSink(DynamicSink):
    """Records every window result with its wall-clock receive time."""

    def __init__(self, out_dir: str) -> None:
        self._out_dir = out_dir

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _RecordingPartition:
        return _RecordingPartition(RecordWriter(self._out_dir, "bytewax-sink"))


class LateCounter(DynamicSink):
    """Counts the events the window dropped as late."""

    def __init__(self, out_dir: str) -> None:
        self._out_dir = out_dir

    def build(self, step_id: str, worker_index: int, worker_count: int) -> StatelessSinkPartition:
        records = RecordWriter(self._out_dir, "bytewax-late")

        class _Partition(StatelessSinkPartition):
            def write_batch(self, items: Iterable[object]) -> None:
                records.late(len(list(items)))

        return _Partition()


def build_flow(rate: int, partitions: int, start_file: str, out_dir: str) -> Dataflow:
    """The benchmark's dataflow."""
    flow = Dataflow("stream_latency")
    events = op.input("generator", flow, PacedSource(rate, partitions, start_file, out_dir))
    clock = EventClock(itemgetter(1), wait_for_system_duration=timedelta(milliseconds=ALLOWED_LAG_MS))
    windower = TumblingWindower(length=timedelta(milliseconds=WINDOW_MS), align_to=EPOCH)
    counted = count_window("count", events, clock, windower, itemgetter(0))
    op.output("results", counted.down, RecordingSink(out_dir))
    op.output("late", counted.late, LateCounter(out_dir))
    return flow


if "STREAM_RATE" in os.environ:
    flow = build_flow(int(os.environ["STREAM_RATE"]), int(os.environ.get("STREAM_PARTITIONS", "1")),
                      os.environ["STREAM_START_FILE"], os.environ["STREAM_OUT_DIR"])
