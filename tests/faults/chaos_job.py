"""The chaos tests' job: a replayable paced stream counted in tumbling windows into a JSON-lines
sink, and a plain-Python oracle of what it must write.

The source emits events ``(sequence, key)`` stamped ``sequence * STEP_MS`` at ``rate`` a second,
``events`` of them, then a "tick" now and then with a rising timestamp, only to move the
watermark past the last window (the ticks are filtered out before the window). Its snapshot is
the next sequence, so a restored job goes on where the snapshot left it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

from jet import AggregateOperations, Pipeline, Sinks, SourceBuilder, WindowDefinition

KEYS = 5
STEP_MS = 1
WINDOW_MS = 1000
BATCH = 500
TICK = "tick"


class PacedEvents:
    """The source's state: the next sequence and the pace it keeps from where it started."""

    def __init__(self, events: int, rate: int) -> None:
        self.events = events
        self.rate = rate
        self.next = 0
        self.ticks = 0
        self._restart(0)

    def _restart(self, sequence: int) -> None:
        self.next = sequence
        self._base = sequence
        self._started = time.monotonic()

    def fill(self, buffer) -> None:
        if self.next < self.events:
            due = self._base + int((time.monotonic() - self._started) * self.rate)
            end = min(due, self.next + BATCH, self.events)
            for sequence in range(self.next, end):
                self.add_event(buffer, sequence)
            self.next = max(self.next, end)
            return
        self.ticks += 1
        buffer.add((TICK, None), (self.events + self.ticks * 100) * STEP_MS)
        time.sleep(0.01)

    def add_event(self, buffer, sequence: int) -> None:
        buffer.add((sequence, sequence % KEYS), sequence * STEP_MS)

    def restore(self, snapshots: list) -> None:
        self._restart(min(snapshots))


def chaos_pipeline(out_dir: str, events: int, rate: int) -> Pipeline:
    source = (SourceBuilder.timestamped_stream("paced-events", lambda context: PacedEvents(events, rate))
              .fill_buffer_fn(PacedEvents.fill)
              .create_snapshot_fn(lambda state: state.next)
              .restore_snapshot_fn(PacedEvents.restore)
              .build())
    p = Pipeline.create()
    (p.read_from(source)
     .with_native_timestamps(0)
     .filter(lambda event: event[0] != TICK)
     .grouping_key(lambda event: event[1])
     .window(WindowDefinition.tumbling(WINDOW_MS))
     .aggregate(AggregateOperations.counting())
     .map(lambda r: {"start": r.start, "key": r.key, "count": r.result})
     .write_to(Sinks.jsonl(out_dir)))
    return p


def oracle(events: int) -> Counter:
    """(window start, key, count) of every window, computed directly."""
    counts = Counter(((sequence * STEP_MS) // WINDOW_MS * WINDOW_MS, sequence % KEYS)
                     for sequence in range(events))
    return Counter((start, key, count) for (start, key), count in counts.items())


def committed_json_rows(out_dir: str) -> Iterator[dict]:
    """The rows of every committed (visible) file of a JSON-lines sink."""
    for path in sorted(Path(out_dir).glob("*")):
        if path.name.startswith(".") or path.name.endswith(".tmp") or not path.is_file():
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                yield json.loads(line)


def committed_rows(out_dir: str, fields: tuple = ("start", "key", "count")) -> Counter:
    """The rows (the values of ``fields``) of every committed (visible) file of the sink, counted."""
    return Counter(tuple(row[field] for field in fields) for row in committed_json_rows(out_dir))
