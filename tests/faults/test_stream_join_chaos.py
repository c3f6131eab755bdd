"""An exactly-once stream-to-stream join (a window join and an interval join of two paced
streams) on a 3-member local cluster whose members are SIGKILLed mid-stream: what the sinks
committed equals the oracle, every pair once."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

import jet
from jet.job_config import JobConfig

from tests.faults.stream_join_job import committed_rows, join_pipeline, oracle
from tests.faults.test_chaos import SETTINGS, _status, _wait, kill_members

EVENTS = 24_000
RATE = 4_000
KILLS = 2


@pytest.mark.timeout(400)
def test_stream_joins_stay_exactly_once_when_members_are_killed(tmp_path):
    seed = int(os.environ.get("JET_CHAOS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    dirs = {name: str(tmp_path / name) for name in ("window", "interval", "broadcast")}
    expected = oracle(EVENTS)
    with jet.local_cluster(3, log_dir=tmp_path / "logs", **SETTINGS) as cluster:
        job = cluster.new_job(join_pipeline(*dirs.values(), EVENTS, RATE),
                              JobConfig(name="stream-join-chaos", processing_guarantee="exactly-once",
                                        snapshot_interval_ms=300))
        kills = kill_members(cluster, job, rng, KILLS, seed, pause_s=(1.0, 2.0))
        _wait(lambda: all(sum(committed_rows(d).values()) >= len(expected) for d in dirs.values()),
              f"every joined pair committed (kills {kills}, seed {seed})", 120)
        time.sleep(1.0)  # anything written twice would show up by now
        info = job.info()
        job.cancel()
    assert info["restarts"] >= KILLS, (info, kills, seed)
    for name, out_dir in dirs.items():
        rows = committed_rows(out_dir)
        assert rows == expected, (f"{name} join output differs (kills {kills}, seed {seed}): missing"
                                  f" {sorted(expected - rows)[:10]}, extra {sorted(rows - expected)[:10]}")


@pytest.mark.timeout(400)
def test_stream_joins_restored_on_fewer_members_then_scaled_up_stay_exactly_once(tmp_path):
    """Member 2 is lost for good: the job goes on with 2 members from its last snapshot, each
    key's window and interval-join state routed to its new owner; when member 2 comes back the
    job scales up to 3 from a terminal snapshot, routed again."""
    dirs = {name: str(tmp_path / name) for name in ("window", "interval", "broadcast")}
    expected = oracle(EVENTS)
    settings = {**SETTINGS, "member_rejoin_timeout_ms": 500, "scale_up_delay_ms": 500}
    with jet.local_cluster(3, log_dir=tmp_path / "logs", **settings) as cluster:
        job = cluster.new_job(join_pipeline(*dirs.values(), EVENTS, RATE),
                              JobConfig(name="stream-join-rescaled", processing_guarantee="exactly-once",
                                        snapshot_interval_ms=300))
        _wait(lambda: _status(job) == "RUNNING", "the job to run", 60)
        time.sleep(1.5)
        cluster.kill_member(2, signal.SIGKILL, restart=False)
        _wait(lambda: _status(job) == "RUNNING" and job.info().get("members") == [0, 1],
              "the job to run on members 0 and 1", 90)
        time.sleep(1.0)
        cluster.restart_member(2)
        _wait(lambda: _status(job) == "RUNNING" and job.info().get("members") == [0, 1, 2],
              "the job to scale up to 3 members", 90)
        _wait(lambda: all(sum(committed_rows(d).values()) >= len(expected) for d in dirs.values()),
              "every joined pair committed", 120)
        time.sleep(1.0)
        info = job.info()
        job.cancel()
    assert info["restarts"] >= 2, info
    for name, out_dir in dirs.items():
        rows = committed_rows(out_dir)
        assert rows == expected, (f"{name} join output differs: missing {sorted(expected - rows)[:10]},"
                                  f" extra {sorted(rows - expected)[:10]}")
