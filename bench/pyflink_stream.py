"""The stream latency benchmark's definition as a PyFlink 2.3 DataStream job.

A Python generator stage paces a `NumberSequenceSource` to the rate (event time = due time, key
= sequence % 100), watermarks of bounded out-of-orderness 50 ms, `TumblingEventTimeWindows` of
1 s counting per key, late events to a side output that is counted, and a Python stage that
records each result's wall-clock receive time. Parallelism 2 by default. Runs in its own virtual
environment (apache-flink pins older pyarrow, pandas and grpcio than the project):

    /tmp/bench-venvs/pyflink/bin/python bench/pyflink_stream.py --rate 100000 --out-dir DIR \\
        --start-file DIR/start [--parallelism 2]

It runs until killed; stream_latency_bench.py starts and stops it.
"""

from __future__ import annotations

import argparse
import os
import site
import sys
import time

from pyflink.common import Configuration, Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import AggregateFunction, FlatMapFunction, MapFunction, ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

KEYS = 100
WINDOW_MS = 1000
ALLOWED_LAG_MS = 50
EVENT_TYPE = Types.TUPLE([Types.INT(), Types.LONG()])  # (key, due ms)
RESULT_TYPE = Types.TUPLE([Types.LONG(), Types.INT(), Types.LONG()])  # (window end ms, key, count)


class Pace(MapFunction):
    """The generator: the i-th number a subtask sees becomes its i-th event, released when due."""

    def __init__(self, rate: int, parallelism: int, start_file: str, out_dir: str) -> None:
        self._rate, self._parallelism, self._start_file, self._out_dir = rate, parallelism, start_file, out_dir

    def open(self, runtime_context) -> None:
        from stream_records import (GENERATOR_REPORT_PERIOD_MS, PacedSequence, RecordWriter, claim_partition,
                                    shared_start_ms)
        # Claimed, not asked: the thread mode's runtime context cannot tell the subtask index in 2.3.
        index = claim_partition(self._start_file, self._parallelism)
        self._sequence = PacedSequence(self._rate, shared_start_ms(self._start_file), index, self._parallelism)
        self._records = RecordWriter(self._out_dir, "pyflink-source")
        self._report_period_ms = GENERATOR_REPORT_PERIOD_MS
        self._reported_ms = 0.0

    def map(self, _number: int) -> tuple[int, int]:
        sequence = self._sequence
        seq = sequence.next_sequence
        due = sequence.due_ms(seq)
        wall = time.time() * 1000.0
        if due > wall:  # sleeping per event costs little: only when ahead of schedule
            time.sleep((due - wall) / 1000.0)
        elif wall - self._reported_ms >= self._report_period_ms:
            self._records.generator(due, sequence.emitted)
            self._reported_ms = wall
        sequence.next_sequence = seq + sequence.count
        sequence.emitted += 1
        return seq % KEYS, due


class DueTime(TimestampAssigner):
    def extract_timestamp(self, value: tuple[int, int], record_timestamp: int) -> int:
        return value[1]


class Count(AggregateFunction):
    def create_accumulator(self) -> int:
        return 0

    def add(self, value: tuple[int, int], accumulator: int) -> int:
        return accumulator + 1

    def get_result(self, accumulator: int) -> int:
        return accumulator

    def merge(self, a: int, b: int) -> int:
        return a + b


class WithWindowEnd(ProcessWindowFunction):
    def process(self, key, context, counts):
        for count in counts:
            yield context.window().end, key, count


class Record(FlatMapFunction):
    """The sink: records each result with its receive time and passes nothing on."""

    def __init__(self, out_dir: str, late: bool = False) -> None:
        self._out_dir, self._late = out_dir, late

    def open(self, runtime_context) -> None:
        from stream_records import RecordWriter
        self._records = RecordWriter(self._out_dir, "pyflink-late" if self._late else "pyflink-sink")

    def flat_map(self, value):
        if self._late:
            self._records.late(1)
        else:
            self._records.results((value,))
        return ()


def build(env: StreamExecutionEnvironment, rate: int, parallelism: int, start_file: str, out_dir: str) -> None:
    """Add the benchmark's job to ``env``."""
    numbers = env.from_source(NumberSequenceSource(0, 2 ** 62), WatermarkStrategy.no_watermarks(), "numbers")
    events = numbers.map(Pace(rate, parallelism, start_file, out_dir), output_type=EVENT_TYPE).name("generator")
    watermarks = (WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(ALLOWED_LAG_MS))
                  .with_timestamp_assigner(DueTime()))
    # Untyped: a typed tag keeps Java references in its nested field types and then fails to
    # pickle with the window function (PyFlink clears only the outer one).
    late = OutputTag("late")
    windowed = (events.assign_timestamps_and_watermarks(watermarks)
                .key_by(lambda event: event[0], key_type=Types.INT())
                .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
                .side_output_late_data(late))
    results = windowed.aggregate(Count(), WithWindowEnd(), accumulator_type=Types.LONG(), output_type=RESULT_TYPE)
    results.flat_map(Record(out_dir)).name("recording-sink").print()
    results.get_side_output(late).flat_map(Record(out_dir, late=True)).name("late-counter").print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, required=True, help="events per second")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--start-file", required=True)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--watermark-interval-ms", type=int, default=50,
                        help="pipeline.auto-watermark-interval (Flink's default is 200)")
    parser.add_argument("--bundle-time-ms", type=int, default=50,
                        help="python.fn-execution.bundle.time (Flink's default is 1000)")
    parser.add_argument("--execution-mode", choices=("process", "thread"), default="thread",
                        help="python.execution-mode: Python workers as processes (Beam) or in the JVM (PEMJA)")
    args = parser.parse_args()
    if args.execution_mode == "thread":
        # The JVM embeds the base interpreter, which does not see this virtual environment.
        paths = [site.getsitepackages()[0], HERE, os.environ.get("PYTHONPATH", "")]
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    config = Configuration()
    config.set_string("python.execution-mode", args.execution_mode)
    config.set_string("python.fn-execution.bundle.time", str(args.bundle_time_ms))
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(args.parallelism)
    env.get_config().set_auto_watermark_interval(args.watermark_interval_ms)
    env.add_python_file(os.path.join(HERE, "stream_records.py"))
    env.add_python_file(os.path.join(HERE, "pyflink_stream.py"))
    build(env, args.rate, args.parallelism, args.start_file, args.out_dir)
    env.execute("stream_latency")


if __name__ == "__main__":
    # Run from the imported module so the functions pickle by reference: the workers import
    # them from the shipped file instead of unpickling this module's globals by value.
    import pyflink_stream
    pyflink_stream.main()
