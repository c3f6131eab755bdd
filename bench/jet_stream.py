"""The stream latency benchmark's definition as a Jet pipeline, run on a local cluster.

`Sources.item_stream(rate, generator_fn)` with key = sequence % 100, native timestamps with a
50 ms allowed lag, `grouping_key`, a 1 s tumbling window counting, and a `SinkBuilder` sink that
records each result's wall-clock receive time in the member that receives it.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(Path(__file__).resolve().parent)]

import jet  # noqa: E402
from jet import AggregateOperations, Pipeline, SinkBuilder, Sources, WindowDefinition  # noqa: E402

from stream_records import RecordWriter, now_ms  # noqa: E402

KEYS = 100
WINDOW_MS = 1000
ALLOWED_LAG_MS = 50
SUBMIT_TIMEOUT_S = 60.0
LATE_EVENTS = "lateEventsDropped"  # Job.metrics()' name, Jet's


def key_of(timestamp: int, sequence: int) -> int:
    """The generator: the event is its key (the item stream stamps it with its due time)."""
    return sequence % KEYS


class _BatchRecorder:
    """Collects the results of one batch the sink received and records them in one write,
    stamped on receipt, as the Bytewax sink records each batch it is given."""

    def __init__(self, out_dir: str) -> None:
        self.records = RecordWriter(out_dir, "jet-sink")
        self.batch: list[tuple[int, Any, int]] = []

    def add(self, result: Any) -> None:
        if type(result) is tuple:  # a (timestamp, result) pair, should a stage hand one over
            result = result[1]
        self.batch.append((result.end, result.key, result.result))

    def flush(self) -> None:
        if self.batch:
            self.records.results(self.batch)
            self.batch = []

    def close(self) -> None:
        self.flush()
        self.records.close()


def recording_sink(out_dir: str):
    """A sink whose processors append every result, stamped on receipt, to ``out_dir`` (one
    write per batch: a write per result spread a window's 50 results over 0.2-0.3 ms)."""
    return (SinkBuilder.sink("recording-sink", lambda context: _BatchRecorder(out_dir))
            .receive_fn(_BatchRecorder.add)
            .flush_fn(_BatchRecorder.flush)
            .destroy_fn(_BatchRecorder.close)
            .build())


def pipeline(rate: int, out_dir: str) -> Pipeline:
    """The benchmark's pipeline."""
    p = Pipeline.create()
    (p.read_from(Sources.item_stream(rate, key_of))
     .with_native_timestamps(ALLOWED_LAG_MS)
     .grouping_key(lambda key: key)
     .window(WindowDefinition.tumbling(WINDOW_MS))
     .aggregate(AggregateOperations.counting())
     .write_to(recording_sink(out_dir)))
    return p


def late_events_dropped(metrics: dict[str, Any]) -> int | None:
    """Sum of ``lateEventsDropped`` over the job's vertices, or None if the metrics lack it."""
    found = [figures[LATE_EVENTS] for figures in metrics.values() if LATE_EVENTS in figures]
    return sum(found) if found else None


def sleep_until(wall_ms: float) -> None:
    time.sleep(max(0.0, (wall_ms - now_ms()) / 1000))


def run(rate: int, members: int, seconds: float, warmup_s: float, out_dir: str, grace_s: float,
        guarantee: str = "none", snapshot_interval_ms: int = 1000, metrics_enabled: bool = True) -> dict[str, Any]:
    """Run the pipeline at ``rate`` on ``members`` members for ``seconds`` (plus ``grace_s`` for
    the last windows to arrive) with the processing ``guarantee`` (snapshots every
    ``snapshot_interval_ms``), with or without the metrics counting; return the run's start (wall ms), the late events dropped after
    the warm-up (None if the metrics do not count them) and the job's last snapshot figures."""
    with tempfile.TemporaryDirectory(prefix="jet-stream-logs-") as logs, \
            jet.local_cluster(members, log_dir=logs) as cluster:
        start = now_ms()
        job = cluster.new_job(pipeline(rate, out_dir), {"processing_guarantee": guarantee,
                                                        "snapshot_interval_ms": snapshot_interval_ms,
                                                        "metrics_enabled": metrics_enabled})
        while job.info()["status"] != "RUNNING":
            if now_ms() - start > SUBMIT_TIMEOUT_S * 1000:
                raise RuntimeError(f"the job did not start within {SUBMIT_TIMEOUT_S} s: {job.info()}")
            time.sleep(0.01)
        sleep_until(start + warmup_s * 1000)
        late_at_warmup = late_events_dropped(job.metrics())
        sleep_until(start + (seconds + grace_s) * 1000)
        late = late_events_dropped(job.metrics())
        info = job.info()
        job.cancel()
    return {"start_ms": start, "late": None if late is None else late - (late_at_warmup or 0),
            "snapshots": info.get("snapshotCount", 0), "last_snapshot": info.get("lastSnapshot")}
