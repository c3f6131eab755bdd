"""Rolling aggregates and async enrichment across an exactly-once restart: a member of a 2-member
cluster is SIGKILLed twice under a paced stream whose per-key running counts are enriched by a
real local HTTP service; the committed output must be exactly the oracle's (every running count
of every key once, with the service's answer)."""

from __future__ import annotations

import signal
import sys
import time
from collections import Counter

import cloudpickle
import pytest

import jet
from jet import AggregateOperations, Pipeline, Sinks, SourceBuilder
from jet.job_config import JobConfig

from tests.faults.chaos_job import KEYS, TICK, PacedEvents, committed_json_rows
from tests.faults.test_chaos import _status, _wait
from tests.pipeline.enrichment_support import LookupService, aiohttp_factory, enriched, lookup_with

cloudpickle.register_pickle_by_value(sys.modules[__name__])

EVENTS = 16_000
RATE = 3_000
SETTINGS = dict(heartbeat_interval_ms=200, heartbeat_timeout_ms=2000, restart_delay_ms=100,
                member_rejoin_timeout_ms=30_000)


def _pipeline(out_dir: str, url: str) -> Pipeline:
    source = (SourceBuilder.timestamped_stream("paced-events", lambda context: PacedEvents(EVENTS, RATE))
              .fill_buffer_fn(PacedEvents.fill)
              .create_snapshot_fn(lambda state: state.next)
              .restore_snapshot_fn(PacedEvents.restore)
              .build())
    lookup = lookup_with(url)

    async def enrich(session, key_and_count):
        key, count = key_and_count
        return {"key": key, "count": count, "enriched": await lookup(session, count)}

    p = Pipeline.create()
    (p.read_from(source).with_native_timestamps(0)
     .filter(lambda event: event[0] != TICK)
     .grouping_key(lambda event: event[1])
     .rolling_aggregate(AggregateOperations.counting())
     .map_using_service_async(aiohttp_factory(), enrich, max_concurrent_ops=16)
     .write_to(Sinks.jsonl(out_dir)))
    return p


def _oracle() -> Counter:
    per_key = Counter(sequence % KEYS for sequence in range(EVENTS))
    return Counter((key, count, enriched(count)) for key, n in per_key.items() for count in range(1, n + 1))


def _committed(out_dir: str) -> Counter:
    return Counter((row["key"], row["count"], row["enriched"]) for row in committed_json_rows(out_dir))


@pytest.mark.timeout(300)
def test_rolling_counts_enriched_async_survive_sigkills_exactly_once(tmp_path):
    out_dir = str(tmp_path / "out")
    expected = _oracle()
    with LookupService(delay_s=0.001) as service, \
            jet.local_cluster(2, log_dir=tmp_path / "logs", **SETTINGS) as cluster:
        job = cluster.new_job(_pipeline(out_dir, service.url),
                              JobConfig(name="enrich-restart", processing_guarantee="exactly-once",
                                        snapshot_interval_ms=300))
        _wait(lambda: _status(job) == "RUNNING", "the job to run", 60)
        for victim in (1, 1):
            committed = sum(_committed(out_dir).values())
            _wait(lambda: sum(_committed(out_dir).values()) > committed, "more committed output", 60)
            time.sleep(0.5)  # killed between two snapshots, with calls out
            cluster.kill_member(victim, signal.SIGKILL)
            _wait(lambda: cluster.cluster_ready() and _status(job) == "RUNNING",
                  f"the job to run again after killing member {victim}", 90)
        _wait(lambda: set(_committed(out_dir)) >= set(expected), "every running count committed", 120)
        time.sleep(1.0)  # anything written twice would show by now
        rows = _committed(out_dir)
        info = job.info()
        job.cancel()
    assert info["restarts"] >= 2, info
    assert rows == expected, (f"{sum(rows.values())} rows committed, {len(expected)} expected;"
                              f" duplicates: {[r for r, n in rows.items() if n > 1][:5]};"
                              f" missing: {sorted(set(expected) - set(rows))[:5]}")
