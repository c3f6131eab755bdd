"""map_batches on a stream without timestamps, with event time added after it, against plain
Python over the same events."""

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, WindowDefinition

from tests.pipeline.stream_support import finite_stream
from tests.pipeline.support import run_pipeline

EVENTS = [(ts, f"k{ts % 5}") for ts in range(0, 3000, 3)]


def shifted(batch: pa.RecordBatch) -> pa.RecordBatch:
    """(ts, key) rows as columns _1, _2: the timestamp moves 1000 ms on, the key is upper-cased."""
    return pa.RecordBatch.from_arrays([pc.add(batch.column("_1"), 1000), pc.utf8_upper(batch.column("_2"))],
                                      names=["ts", "key"])


@pytest.mark.parametrize("members", [1, 2])
def test_event_time_added_after_map_batches_drives_windows(members):
    p = Pipeline.create()
    (p.read_from(finite_stream(EVENTS, emits_watermarks=False)).without_timestamps()
     .map_batches(shifted)
     .add_timestamps(lambda row: row[0], 50)
     .grouping_key(lambda row: row[1]).window(WindowDefinition.tumbling(500)).aggregate(A.counting())
     .write_to(Sinks.list()))
    results = run_pipeline(p, members)
    expected = Counter(((ts + 1000) // 500 * 500, key.upper()) for ts, key in EVENTS)
    assert {(r.start, r.key): r.result for r in results["default"]} == expected


def test_a_keyed_stateful_stage_after_map_batches_on_a_stream_without_timestamps():
    p = Pipeline.create()
    (p.read_from(finite_stream(EVENTS)).without_timestamps()
     .map_batches(shifted)
     .grouping_key(lambda row: row[1])
     .map_stateful(lambda: [0], lambda state, key, row: (key, _count(state)))
     .write_to(Sinks.list()))
    results = run_pipeline(p, 1)
    per_key = Counter(key.upper() for _, key in EVENTS)
    assert sorted(results["default"]) == sorted((key, n) for key, total in per_key.items()
                                                for n in range(1, total + 1))


def _count(state: list) -> int:
    state[0] += 1
    return state[0]
