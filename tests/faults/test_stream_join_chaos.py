"""An exactly-once stream-to-stream join (a window join and an interval join of two paced
streams) on a 3-member local cluster whose members are SIGKILLed mid-stream: what the sinks
committed equals the oracle, every pair once."""

from __future__ import annotations

import os
import random
import time

import pytest

import jet
from jet.job_config import JobConfig

from tests.faults.stream_join_job import committed_rows, join_pipeline, oracle
from tests.faults.test_chaos import SETTINGS, _wait, kill_members

EVENTS = 24_000
RATE = 4_000
KILLS = 2


@pytest.mark.timeout(400)
def test_stream_joins_stay_exactly_once_when_members_are_killed(tmp_path):
    seed = int(os.environ.get("JET_CHAOS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    window_dir, interval_dir = str(tmp_path / "window"), str(tmp_path / "interval")
    expected = oracle(EVENTS)
    with jet.local_cluster(3, log_dir=tmp_path / "logs", **SETTINGS) as cluster:
        job = cluster.new_job(join_pipeline(window_dir, interval_dir, EVENTS, RATE),
                              JobConfig(name="stream-join-chaos", processing_guarantee="exactly-once",
                                        snapshot_interval_ms=300))
        kills = kill_members(cluster, job, rng, KILLS, seed, pause_s=(1.0, 2.0))
        _wait(lambda: all(sum(committed_rows(d).values()) >= len(expected) for d in (window_dir, interval_dir)),
              f"every joined pair committed (kills {kills}, seed {seed})", 120)
        time.sleep(1.0)  # anything written twice would show up by now
        info = job.info()
        job.cancel()
    assert info["restarts"] >= KILLS, (info, kills, seed)
    for name, out_dir in (("window", window_dir), ("interval", interval_dir)):
        rows = committed_rows(out_dir)
        assert rows == expected, (f"{name} join output differs (kills {kills}, seed {seed}): missing"
                                  f" {sorted(expected - rows)[:10]}, extra {sorted(rows - expected)[:10]}")
