"""What every system's run of the stream latency benchmark writes, and the paced generator.

Each process of a run appends lines to its own file in the run's directory, so no process waits
for another and a run that is killed mid-way leaves everything it wrote:

    W <receive wall ms> <window end ms> <key> <count>   a window result reached the sink
    L <wall ms> <n>                                      n late events were dropped
    G <wall ms> <due ms of the next event> <emitted>     a generator partition's progress

Only the standard library: the PyFlink side imports this in its own virtual environment.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Iterable

RESULT, LATE, GENERATOR = "W", "L", "G"
GENERATOR_REPORT_PERIOD_MS = 1000
LATE_REPORT_PERIOD_MS = 100


def now_ms() -> float:
    """Wall-clock time in milliseconds since the epoch (the clock window ends are on)."""
    return time.time() * 1000.0


class RecordWriter:
    """Appends records of one process (and one role) to ``<directory>/<role>-<pid>.txt``."""

    def __init__(self, directory: str, role: str) -> None:
        self._file = open(os.path.join(directory, f"{role}-{os.getpid()}-{id(self)}.txt"), "a", buffering=1)
        self._late_pending = 0
        self._late_written_ms = 0.0

    def results(self, results: Iterable[tuple[int, object, int]]) -> None:
        """Record ``(window end ms, key, count)`` results received together, now."""
        received = now_ms()
        self._file.write("".join(f"{RESULT} {received:.3f} {end} {key} {count}\n" for end, key, count in results))

    def late(self, count: int) -> None:
        """Count ``count`` dropped late events (written at most every 100 ms)."""
        self._late_pending += count
        wall = now_ms()
        if wall - self._late_written_ms >= LATE_REPORT_PERIOD_MS:
            self._file.write(f"{LATE} {wall:.3f} {self._late_pending}\n")
            self._late_pending, self._late_written_ms = 0, wall

    def generator(self, next_due_ms: float, emitted: int) -> None:
        """Record a generator partition's progress: the due time of its next event."""
        self._file.write(f"{GENERATOR} {now_ms():.3f} {next_due_ms} {emitted}\n")

    def close(self) -> None:
        if self._late_pending:
            self._file.write(f"{LATE} {now_ms():.3f} {self._late_pending}\n")
            self._late_pending = 0
        self._file.close()


def shared_start_ms(path: str, delay_ms: float = 500.0) -> int:
    """The run's start (wall ms), agreed by every process: the first to ask fixes it at now +
    ``delay_ms``; the others read it. ``os.link`` makes the first writer win atomically."""
    if not os.path.exists(path):
        draft = f"{path}.{os.getpid()}-{threading.get_ident()}"  # Flink's thread mode: one process
        with open(draft, "w") as out:
            out.write(str(round(now_ms() + delay_ms)))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        os.unlink(draft)
    with open(path) as shared:
        return int(shared.read())


def claim_partition(start_path: str, count: int) -> int:
    """A partition index in [0, count) no other process of the run has claimed (for a runtime
    that cannot tell a function which parallel instance it is)."""
    for index in range(count):
        try:
            os.close(os.open(f"{start_path}.partition-{index}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return index
        except FileExistsError:
            continue
    raise RuntimeError(f"all {count} generator partitions are claimed already")


class PacedSequence:
    """The events of one generator partition, sequence ``n`` due at ``start + n * 1000 // rate``
    (whole milliseconds, as Jet's item stream, so a window holds exactly ``rate`` events).

    Partition ``index`` of ``count`` owns the sequences congruent to ``index`` modulo ``count``,
    so all partitions together produce ``rate`` events per second. Event time = due time: a
    generator that falls behind emits events with their old timestamps, and its lateness shows
    in the windows' latency, not hidden by fresh timestamps.
    """

    def __init__(self, rate: int, start_ms: int, index: int = 0, count: int = 1,
                 max_batch: int = 10_000) -> None:
        if not isinstance(rate, int) or rate <= 0:
            raise ValueError(f"rate must be a positive int of events per second, got {rate!r}")
        if not 0 <= index < count:
            raise ValueError(f"partition index must be in [0, {count}), got {index!r}")
        self.rate, self.start_ms, self.index, self.count = rate, start_ms, index, count
        self.max_batch = max_batch
        self.next_sequence = index
        self.emitted = 0

    def due_ms(self, sequence: int) -> int:
        """When ``sequence`` is due (wall ms)."""
        return self.start_ms + sequence * 1000 // self.rate

    def take_due(self, wall_ms: float) -> range:
        """The sequences of this partition due by ``wall_ms`` not taken yet (at most
        ``max_batch``), as a range stepping by the partition count."""
        # Sequence n is due when n * 1000 // rate <= elapsed, i.e. n < (elapsed + 1) * rate / 1000.
        elapsed = math.floor(wall_ms - self.start_ms)
        due_count = -(-(elapsed + 1) * self.rate // 1000) if elapsed >= 0 else 0
        end = min(due_count, self.next_sequence + self.max_batch * self.count)
        taken = range(self.next_sequence, max(end, self.next_sequence), self.count)
        if taken:
            self.next_sequence = taken[-1] + self.count
            self.emitted += len(taken)
        return taken
