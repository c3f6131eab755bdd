"""The stream-join chaos test's job: two replayable paced streams joined per key in tumbling
windows and by interval into two JSON-lines sinks, and a plain-Python oracle of what they must
write.

The left stream emits ``(sequence, sequence)`` (key = sequence) stamped ``sequence * STEP_MS``;
the right one every ``RIGHT_EVERY``-th sequence alike. So each right event joins exactly one
left event, in the window join and in the interval join alike, and every joined row must be
committed exactly once. The pacing, the ticks that move the watermark past the last window and
the snapshot (the next sequence) are the chaos job's (``chaos_job.PacedEvents``).
"""

from __future__ import annotations

from collections import Counter

from jet import Pipeline, Sinks, SourceBuilder, WindowDefinition

from tests.faults import chaos_job
from tests.faults.chaos_job import STEP_MS, TICK, PacedEvents

WINDOW_MS = 1000
RIGHT_EVERY = 3
INTERVAL_UPPER_MS = 5


class PacedSide(PacedEvents):
    """Every ``every``-th sequence as ``(sequence, sequence)``."""

    def __init__(self, events: int, rate: int, every: int) -> None:
        super().__init__(events, rate)
        self.every = every

    def add_event(self, buffer, sequence: int) -> None:
        if sequence % self.every == 0:
            buffer.add((sequence, sequence), sequence * STEP_MS)


def _side(name: str, events: int, rate: int, every: int):
    return (SourceBuilder.timestamped_stream(name, lambda context: PacedSide(events, rate, every))
            .fill_buffer_fn(PacedSide.fill)
            .create_snapshot_fn(lambda state: state.next)
            .restore_snapshot_fn(PacedSide.restore)
            .build())


def join_pipeline(window_dir: str, interval_dir: str, broadcast_dir: str, events: int, rate: int) -> Pipeline:
    """A window join, an interval join and an interval join that broadcasts its left side, of the
    same two streams, each into its own directory. A left item often waits in a snapshot for the
    right one of its sequence, which the other source sends after its own barrier: so the
    broadcast join's restores depend on its saved copies of the broadcast side."""
    p = Pipeline.create()
    left = p.read_from(_side("left", events, rate, 1)).with_native_timestamps(0) \
        .filter(lambda event: event[0] != TICK)
    right = p.read_from(_side("right", events, rate, RIGHT_EVERY)).with_native_timestamps(0) \
        .filter(lambda event: event[0] != TICK)
    (left.grouping_key(lambda event: event[1])
     .window(WindowDefinition.tumbling(WINDOW_MS))
     .join(right.grouping_key(lambda event: event[1]), lambda a, b: {"left": a[0], "right": b[0]})
     .write_to(Sinks.jsonl(window_dir)))
    (left.grouping_key(lambda event: event[1])
     .interval_join(right.grouping_key(lambda event: event[1]), 0, INTERVAL_UPPER_MS,
                    lambda a, b: {"left": a[0], "right": b[0]})
     .write_to(Sinks.jsonl(interval_dir)))
    (left.grouping_key(lambda event: event[1])
     .interval_join(right.grouping_key(lambda event: event[1]), 0, INTERVAL_UPPER_MS,
                    lambda a, b: {"left": a[0], "right": b[0]}, broadcast="left")
     .write_to(Sinks.jsonl(broadcast_dir)))
    return p


def oracle(events: int) -> Counter:
    """(left, right) of every joined pair, once each (the joins give the same pairs)."""
    return Counter((sequence, sequence) for sequence in range(0, events, RIGHT_EVERY))


def committed_rows(out_dir: str) -> Counter:
    """The (left, right) rows of every committed (visible) file of a sink."""
    return chaos_job.committed_rows(out_dir, ("left", "right"))
