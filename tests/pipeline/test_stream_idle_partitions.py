"""An idle source partition does not hold back the results of the others (Jet's idle timeout).

One source processor per member: the one with global index 0 emits an event every 10 ms of
event time, the other never emits and never closes. Without idleness the silent one would hold
every member's watermark at its start and no window would close while the job runs.
"""

from __future__ import annotations

import sys
import time

import cloudpickle
import pytest

import jet
from jet import AggregateOperations, Pipeline, Sinks, SourceBuilder, WindowDefinition

cloudpickle.register_pickle_by_value(sys.modules[__name__])

EVENTS_PER_FILL = 20
EVENT_SPACING_MS = 10


class _Feed:
    """Processor 0's state: the next event number; every other processor stays silent."""

    def __init__(self, context) -> None:
        self.active = context.global_index == 0
        self.next = 0


def _fill(feed: _Feed, buffer) -> None:
    if not feed.active:
        time.sleep(0.01)
        return
    for n in range(feed.next, feed.next + EVENTS_PER_FILL):
        buffer.add(("k", n), n * EVENT_SPACING_MS)
    feed.next += EVENTS_PER_FILL
    time.sleep(0.005)


@pytest.mark.parametrize("members", [1, 2])
def test_an_idle_partition_does_not_hold_back_window_results(members):
    source = (SourceBuilder.timestamped_stream("half-silent", _Feed).fill_buffer_fn(_fill)
              .distributed(2 // members).build().set_partition_idle_timeout(300))
    p = Pipeline.create()
    (p.read_from(source).with_native_timestamps(0)
     .window(WindowDefinition.tumbling(1000))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.observable("windows")))
    with jet.local_cluster(members=members) as cluster:
        job = cluster.new_job(p)
        results = []
        for result in job.observable("windows"):
            results.append(result)
            if len(results) == 3:
                break
        job.cancel()
    # Oracle: every window [s, s + 1000) holds the events n with n * 10 in it: 100 of them.
    assert [(r.start, r.end, r.result) for r in results] == [
        (0, 1000, 100), (1000, 2000, 100), (2000, 3000, 100)]
