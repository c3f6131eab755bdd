"""The stream latency benchmark's statistics over what a run's processes recorded.

Measured windows are the 1 s windows that start at least ``warmup`` after the run's start and
end by the end of the run. A result's latency is its receive time minus its window's end. The
run is *saturated* when it did not keep up: results of measured windows missing at the end, a
generator behind schedule at the end, or latency growing over the run. Late events are counted
from the end of the warm-up.
"""

from __future__ import annotations

import glob
import math
import os
import statistics
from dataclasses import dataclass, field

from stream_records import GENERATOR, LATE, RESULT

SATURATED_BEHIND_MS = 1000.0
"""A generator this far behind schedule at the end has not kept up."""
SATURATED_GROWTH_MS = 500.0
"""Median latency of the last measured windows this much above that of the first: falling behind."""
TREND_WINDOWS = 3


@dataclass
class RunRecords:
    """Everything the processes of one run wrote (see stream_records)."""

    results: list[tuple[float, int, str, int]] = field(default_factory=list)  # (receive ms, end ms, key, count)
    late: list[tuple[float, int]] = field(default_factory=list)  # (wall ms, late events dropped)
    generators: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # file -> last (wall, due, emitted)

    @classmethod
    def read(cls, directory: str) -> "RunRecords":
        records = cls()
        for path in sorted(glob.glob(os.path.join(directory, "*.txt"))):
            with open(path) as lines:
                for line in lines:
                    fields = line.split()
                    if len(fields) == 5 and fields[0] == RESULT:
                        records.results.append((float(fields[1]), int(fields[2]), fields[3], int(fields[4])))
                    elif len(fields) == 3 and fields[0] == LATE:
                        records.late.append((float(fields[1]), int(fields[2])))
                    elif len(fields) == 4 and fields[0] == GENERATOR:
                        records.generators[path] = (float(fields[1]), float(fields[2]), int(fields[3]))
        return records


@dataclass
class RunSummary:
    """One row of the benchmark's table."""

    windows: int
    results: int
    results_expected: int
    latencies_ms: list[float]
    events_counted: int
    events_expected: int
    late: int | None
    behind_ms: float | None
    generated_per_s: float | None
    rate: float
    growth_ms: float | None

    def percentile(self, fraction: float) -> float | None:
        """Nearest-rank percentile of the latencies (None when there are none)."""
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]

    @property
    def saturated_because(self) -> str:
        """Why the run did not keep up, or "" when it did."""
        reasons = []
        if self.results < self.results_expected:
            reasons.append(f"{self.results_expected - self.results:,} of {self.results_expected:,} results missing")
        if self.behind_ms is not None and self.behind_ms > SATURATED_BEHIND_MS:
            reasons.append(f"generator {self.behind_ms / 1000:.1f} s ({self.behind_ms * self.rate / 1000:,.0f} events)"
                           f" behind, at {self.generated_per_s:,.0f} events/s")
        if self.growth_ms is not None and self.growth_ms > SATURATED_GROWTH_MS:
            reasons.append(f"latency grew {self.growth_ms / 1000:.1f} s")
        return "; ".join(reasons)


def measured_window_ends(start_ms: float, seconds: float, warmup_s: float, window_ms: int) -> range:
    """Ends of the windows that start at or after ``start + warmup`` and end by ``start + seconds``."""
    first_start = math.ceil((start_ms + warmup_s * 1000) / window_ms) * window_ms
    last_end = math.floor((start_ms + seconds * 1000) / window_ms) * window_ms
    return range(first_start + window_ms, last_end + 1, window_ms)


def summarize(records: RunRecords, start_ms: float, seconds: float, warmup_s: float, rate: float,
              keys: int, window_ms: int) -> RunSummary:
    """Statistics of one run."""
    ends = measured_window_ends(start_ms, seconds, warmup_s, window_ms)
    generators = list(records.generators.values())
    wanted = set(ends)
    measured = [result for result in records.results if result[1] in wanted]
    latency_by_end: dict[int, list[float]] = {}
    for received, end, _key, _count in measured:
        latency_by_end.setdefault(end, []).append(received - end)
    growth = None
    if len(latency_by_end) >= 2 * TREND_WINDOWS:
        by_window = [latency_by_end[end] for end in sorted(latency_by_end)]
        first, last = sum(by_window[:TREND_WINDOWS], []), sum(by_window[-TREND_WINDOWS:], [])
        growth = statistics.median(last) - statistics.median(first)
    return RunSummary(
        windows=len(ends), results=len(measured), results_expected=len(ends) * keys,
        latencies_ms=[received - end for received, end, _key, _count in measured],
        events_counted=sum(result[3] for result in measured),
        events_expected=round(rate * window_ms / 1000) * len(ends),
        late=sum(count for wall, count in records.late if wall >= start_ms + warmup_s * 1000),
        behind_ms=max((wall - due for wall, due, _ in generators), default=None),
        generated_per_s=(sum(emitted for _, _, emitted in generators) * 1000
                         / max(1.0, max(wall for wall, _, _ in generators) - start_ms)) if generators else None,
        rate=rate,
        growth_ms=growth)
