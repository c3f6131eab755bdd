"""An exactly-once Kafka -> Kafka job on a local cluster of member processes while its broker
stops and starts again on the same port and data directory (noida-db: tansu's build keeps no
data across a restart; see ``noida.py``).

The oracle is the input itself: the committed output (from the raw log, transaction markers
applied) must hold each input record exactly once. A broker that stays away must fail the job
within a bounded time with an error naming the broker, and leave what was committed as it was.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

import jet
from jet import Pipeline, Sinks, Sources
from jet.connectors.kafka.client_config import BROKER_OUTAGE_S
from tests.cluster.cluster_support import join_failure, wait_until
from tests.connectors.kafka.kafka_support import committed_values, create_topic
from tests.connectors.kafka.test_kafka_cluster import EXACTLY_ONCE, WAIT_S, produce_slowly, wait_committed

pytestmark = pytest.mark.slow

OUTAGE_S = 6.0
"""How long the broker stays away in the ride-it-out test: well within ``BROKER_OUTAGE_S``."""


def upper_pipeline(servers: str, source_topic: str, sink_topic: str) -> Pipeline:
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=bytes.decode))
     .with_native_timestamps(0)
     .map(str.upper)
     .write_to(Sinks.kafka(sink_topic, servers)))
    return p


def upper_job(cluster, servers: str, partitions: tuple[int, int], values: list[str]):
    """The job over new topics "in" and "out" of ``partitions``, ``values`` written into "in"."""
    create_topic(servers, "in", partitions[0])
    create_topic(servers, "out", partitions[1])
    job = cluster.new_job(upper_pipeline(servers, "in", "out"), EXACTLY_ONCE)
    produce_slowly(servers, "in", partitions[0], values)
    return job


def test_an_exactly_once_job_rides_out_a_broker_restart(restartable_broker, tmp_path):
    broker = restartable_broker
    servers = broker.bootstrap_servers
    values = [f"r{i}" for i in range(2000)]
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = upper_job(cluster, servers, (4, 2), values[:1000])
        wait_until(lambda: len(committed_values(servers, "out", 2)) >= 300, WAIT_S, "output before the stop")
        broker.stop()
        time.sleep(OUTAGE_S)
        broker.start()
        assert job.status.name == "RUNNING", "the job rode the outage out"
        produce_slowly(servers, "in", 4, values[1000:])
        got = wait_committed(servers, "out", 2, len(values))
        assert job.status.name == "RUNNING" and job.info()["restarts"] == 0
        job.cancel()
    assert Counter(got) == Counter(v.upper().encode() for v in values), "each record once, none lost"


def test_a_broker_that_stays_away_fails_the_job_in_bounded_time_naming_it(restartable_broker, tmp_path):
    broker = restartable_broker
    servers = broker.bootstrap_servers
    values = [f"r{i}" for i in range(600)]
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = upper_job(cluster, servers, (2, 1), values)
        before = wait_committed(servers, "out", 1, len(values))
        broker.stop()
        message, took = join_failure(job, BROKER_OUTAGE_S + 60)
        broker.start()
    assert servers in message and "Kafka" in message, message
    assert took < BROKER_OUTAGE_S + 45, f"failed after {took:.0f} s"
    assert Counter(before) == Counter(v.upper().encode() for v in values)
    assert Counter(committed_values(servers, "out", 1)) == Counter(before), "what was committed stays, once"
