"""Chaos: members of a 3-member local cluster are killed at random moments under a running
windowed job; the committed output is checked against a plain-Python oracle."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

import jet
from jet.job_config import JobConfig

from tests.faults.chaos_job import chaos_pipeline, committed_rows, oracle

EVENTS = 40_000
RATE = 4_000
KILLS = 5
SETTINGS = dict(heartbeat_interval_ms=200, heartbeat_timeout_ms=2000, restart_delay_ms=100,
                member_rejoin_timeout_ms=30_000)


def _status(job) -> str:
    try:
        return job.info()["status"]
    except Exception:  # noqa: BLE001 - member 0 may be down right now
        return "UNREACHABLE"


def _wait(condition, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.1)


def _best_counts(rows) -> dict:
    best: dict = {}
    for (start, key, count) in rows:
        best[(start, key)] = max(best.get((start, key), 0), count)
    return best


def _covers(rows, expected) -> bool:
    """Every window of the oracle is there with at least its count."""
    best = _best_counts(rows)
    return all(best.get((start, key), 0) >= count for start, key, count in expected)


def kill_members(cluster, job, rng: random.Random, count: int, seed: int, pause_s=(0.5, 2.0)) -> list[int]:
    """Once the job runs, SIGKILL a random member ``count`` times, each after a random pause,
    waiting for the job to run again each time; the victims' indexes."""
    _wait(lambda: _status(job) == "RUNNING", "the job to run", 60)
    kills: list[int] = []
    for _ in range(count):
        time.sleep(rng.uniform(*pause_s))
        victim = rng.randrange(3)
        kills.append(victim)
        cluster.kill_member(victim, signal.SIGKILL)
        _wait(lambda: cluster.cluster_ready() and _status(job) == "RUNNING",
              f"the job to run again after killing member {victim} (kills so far {kills}, seed {seed})", 90)
    return kills


def _run_with_kills(tmp_path, guarantee: str, seed: int):
    out_dir = str(tmp_path / "out")
    rng = random.Random(seed)
    with jet.local_cluster(3, log_dir=tmp_path / "logs", **SETTINGS) as cluster:
        job = cluster.new_job(chaos_pipeline(out_dir, EVENTS, RATE),
                              JobConfig(name="chaos", processing_guarantee=guarantee, snapshot_interval_ms=300))
        kills = kill_members(cluster, job, rng, KILLS, seed)
        expected = oracle(EVENTS)
        _wait(lambda: _covers(committed_rows(out_dir), expected),
              f"every window of the oracle committed (kills {kills}, seed {seed})", 120)
        time.sleep(1.0)  # anything written twice would show up by now
        rows = committed_rows(out_dir)
        info = job.info()
        job.cancel()
    return rows, kills, info


@pytest.mark.timeout(400)
def test_killing_random_members_five_times_leaves_exactly_the_oracles_output(tmp_path):
    seed = int(os.environ.get("JET_CHAOS_SEED", random.randrange(1 << 30)))
    rows, kills, info = _run_with_kills(tmp_path, "exactly-once", seed)
    assert info["restarts"] >= KILLS, (info, kills, seed)
    assert rows == oracle(EVENTS), f"committed output differs from the oracle (kills {kills}, seed {seed})"


@pytest.mark.timeout(400)
def test_at_least_once_loses_nothing_when_members_are_killed(tmp_path):
    seed = int(os.environ.get("JET_CHAOS_SEED", random.randrange(1 << 30)))
    rows, kills, info = _run_with_kills(tmp_path, "at-least-once", seed)
    best = _best_counts(rows)
    for (start, key, count) in oracle(EVENTS):
        assert best.get((start, key), 0) >= count, f"window {start} key {key} lost events (kills {kills}, seed {seed})"
