"""Job.metrics() and Job.measurements() of real jobs on real member processes, against oracles
computed from the input in plain Python."""

from __future__ import annotations

from collections import Counter

import pytest

import jet
from jet.job_config import JobConfig
from tests.cluster.cluster_support import wait_until
from tests.metrics.jobs import KEYS, LINES, back_pressure_dag, snapshotting_dag, word_count_dag, word_count_oracle

PROCESSOR_TAGS = {"job", "job_name", "execution", "vertex", "processor", "member"}
EDGE_TAGS = PROCESSOR_TAGS | {"ordinal", "to_vertex"}
DISTRIBUTED_TAGS = {"job", "job_name", "execution", "vertex", "ordinal", "to_vertex", "member", "remote_member"}


@pytest.fixture(scope="module")
def cluster():
    with jet.local_cluster(members=2) as cluster:
        yield cluster


def run(cluster, dag, config=None):
    job = cluster.new_job(dag, config)
    job.join(120)
    return job


def assert_word_counts(metrics: dict, oracle: dict) -> None:
    assert metrics["lines"]["out"] == oracle["lines"]
    assert metrics["words"]["in"] == oracle["lines"]
    assert metrics["words"]["out"] == oracle["words"]
    assert metrics["counts"]["in"] == oracle["words"]
    assert metrics["counts"]["out"] == oracle["distinct"]
    assert metrics["sink"]["in"] == oracle["distinct"]


def assert_distributed_counts(metrics: dict) -> None:
    sent = metrics["words"]["distributedItemsOut"]
    assert 0 < sent < metrics["words"]["out"]  # about half the words belong to the other member
    assert metrics["counts"]["distributedItemsIn"] == sent
    assert metrics["words"]["distributedBytesOut"] > 0
    assert metrics["counts"]["distributedBytesIn"] == metrics["words"]["distributedBytesOut"]


def test_finished_word_count_metrics_equal_the_counts_of_the_input(cluster):
    job = run(cluster, word_count_dag())
    metrics = job.metrics()
    oracle = word_count_oracle(LINES)
    assert_word_counts(metrics, oracle)
    assert_distributed_counts(metrics)
    assert metrics["counts"]["receivedBatches"] >= 2  # one member's processors at least once each
    assert metrics["counts"]["receivedBatches"] <= oracle["words"]
    assert sorted(job.result("counts")) == sorted(Counter(w for line in LINES for w in line.split()).items())


def test_the_same_through_jet_connect(cluster):
    with jet.connect(cluster.addresses, cluster.token, tls=cluster.tls) as client:
        job = client.new_job(word_count_dag())
        job.join(120)
        metrics = client.job(job.id).metrics()
    assert_word_counts(metrics, word_count_oracle(LINES))
    assert_distributed_counts(metrics)


def test_measurements_carry_jets_tags_on_every_member(cluster):
    job = run(cluster, word_count_dag())
    measurements = job.measurements()
    assert {m["tags"]["member"] for m in measurements} == {"0", "1"}
    for item in measurements:
        tags = set(item["tags"])
        assert isinstance(item["value"], int)
        if "remote_member" in tags:
            assert tags == DISTRIBUTED_TAGS, item
        elif "ordinal" in tags:
            assert tags == EDGE_TAGS, item
        else:
            assert tags == PROCESSOR_TAGS, item
        assert item["tags"]["job"] == job.id
    emitted = sum(m["value"] for m in measurements
                  if m["metric"] == "emittedCount" and m["tags"]["vertex"] == "words" and "ordinal" in m["tags"])
    assert emitted == word_count_oracle(LINES)["words"]  # per-ordinal counts add up to the vertex's
    to_vertices = {m["tags"]["to_vertex"] for m in measurements if m["tags"].get("vertex") == "words"
                   and "ordinal" in m["tags"]}
    assert to_vertices == {"counts"}


def test_a_slow_sink_shows_back_pressure_on_the_vertex_feeding_it_only(cluster):
    job = run(cluster, back_pressure_dag())
    measurements = job.measurements()

    def edge_total(vertex: str, to_vertex: str) -> int:
        return sum(m["value"] for m in measurements if m["metric"] == "backPressuredTimeMs"
                   and m["tags"].get("vertex") == vertex and m["tags"].get("to_vertex") == to_vertex
                   and "processor" in m["tags"])

    held_back = edge_total("relay", "slow_sink")
    free = edge_total("numbers", "fast_sink")
    assert held_back > 0
    assert free < held_back
    metrics = job.metrics()
    assert metrics["relay"]["backPressuredTimeMs"] >= held_back  # the vertex sums its ordinals
    assert metrics["fast_sink"]["backPressuredTimeMs"] == 0  # a sink has no output to be held back on


def test_metrics_off_gives_the_same_results_without_the_extra_counting(cluster):
    job = run(cluster, word_count_dag(), {"metrics_enabled": False})
    metrics = job.metrics()
    assert_word_counts(metrics, word_count_oracle(LINES))
    assert all(figures["receivedBatches"] == 0 and figures["backPressuredTimeMs"] == 0
               for figures in metrics.values())


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_metrics_enabled_refuses_what_is_not_a_bool(cluster, value):
    with pytest.raises(ValueError, match="metrics_enabled must be True or False"):
        JobConfig(metrics_enabled=value)
    with pytest.raises(ValueError, match="metrics_enabled must be True or False"):
        cluster.new_job(word_count_dag(), {"metrics_enabled": value})


def test_snapshot_figures_count_the_state_each_processor_saved(cluster):
    job = cluster.new_job(snapshotting_dag(), {"processing_guarantee": "at-least-once", "snapshot_interval_ms": 100})
    try:
        wait_until(lambda: job.metrics().get("counts", {}).get("snapshotKeys") == KEYS,
                   what=f"a snapshot holding the {KEYS} keys' counts")
        metrics = job.metrics()
        assert metrics["counts"]["snapshotBytes"] > 0
        assert metrics["numbers"]["snapshotKeys"] == 0  # the test source keeps no state
        per_processor = [m for m in job.measurements() if m["metric"] == "snapshotKeys"
                         and m["tags"]["vertex"] == "counts"]
        assert len(per_processor) == 4  # 2 processors on each of 2 members
    finally:
        job.cancel()
