"""Kafka in and out of jobs on a local cluster of real member processes, members SIGKILLed
mid-stream; the committed output (from the raw log, transaction markers applied) is compared
with a plain-Python oracle over the input records."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

import jet
from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition
from tests.cluster.cluster_support import wait_until
from tests.connectors.kafka.kafka_support import committed_values, produce

SNAPSHOT_INTERVAL_MS = 300
WAIT_S = 120
EXACTLY_ONCE = {"processing_guarantee": "exactly-once", "snapshot_interval_ms": SNAPSHOT_INTERVAL_MS}


def produce_slowly(servers: str, topic: str, partitions: int, values: list[str], batches: int = 5,
                   timestamps: list[int] | None = None) -> None:
    """Write ``values`` round-robin over the partitions in ``batches`` steps, 0.2 s apart."""
    step = -(-len(values) // batches)
    for start in range(0, len(values), step):
        chunk = range(start, min(start + step, len(values)))
        produce(servers, topic, [(i % partitions, None, values[i].encode()) for i in chunk],
                None if timestamps is None else [timestamps[i] for i in chunk])
        time.sleep(0.2)


def wait_committed(servers: str, topic: str, partitions: int, count: int) -> list[bytes]:
    """The committed values once there are ``count`` of them, checked again a few snapshots later."""
    wait_until(lambda: len(committed_values(servers, topic, partitions)) >= count, WAIT_S,
               f"{count} committed records in {topic}", interval_s=0.5)
    time.sleep(4 * SNAPSHOT_INTERVAL_MS / 1000)  # anything written twice would be committed by now
    return committed_values(servers, topic, partitions)


@pytest.mark.parametrize("guarantee", ["exactly-once", "at-least-once"])
def test_a_pass_through_job_that_loses_a_member_loses_no_record(kafka_broker, new_topic, tmp_path, guarantee):
    """Exactly-once: every record once. At-least-once: every record, some maybe twice."""
    servers = kafka_broker.bootstrap_servers
    source_topic, sink_topic = new_topic(6), new_topic(2)
    values = [f"r{i}" for i in range(3000)]
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=bytes.decode))
     .with_native_timestamps(0)
     .map(str.upper)
     .write_to(Sinks.kafka(sink_topic, servers)))
    with jet.local_cluster(members=3, log_dir=tmp_path / "logs", restart_delay_ms=100) as cluster:
        job = cluster.new_job(p, {**EXACTLY_ONCE, "processing_guarantee": guarantee})
        produce_slowly(servers, source_topic, 6, values[:1500])
        wait_until(lambda: len(committed_values(servers, sink_topic, 2)) >= 300, WAIT_S, "output before the kill")
        cluster.kill_member(2)
        produce_slowly(servers, source_topic, 6, values[1500:])
        wait_until(lambda: job.info()["restarts"] >= 1, WAIT_S, "the restart")
        got = wait_committed(servers, sink_topic, 2, len(values))
        job.cancel()
    expected = Counter(v.upper().encode() for v in values)
    if guarantee == "exactly-once":
        assert Counter(got) == expected, "each record once, none lost"
    else:
        assert set(got) == set(expected), "none lost"


def test_a_windowed_count_from_kafka_to_kafka_is_exactly_once_across_member_kills(kafka_broker, new_topic, tmp_path):
    """Kafka -> 1 s tumbling window count per word -> Kafka, exactly-once, a member killed twice."""
    servers = kafka_broker.bootstrap_servers
    source_topic, sink_topic = new_topic(4), new_topic(1)
    base = 1_700_000_000_000
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    count = 4000
    values = [words[(i * 7) % len(words)] for i in range(count)]
    timestamps = [base + i * 5 for i in range(count)]  # 20 s of event time, 200 records a second
    # a last record per partition far ahead closes every window of the oracle
    closing = [base + count * 5 + 5_000] * 4
    oracle = Counter((ts - ts % 1000, word) for ts, word in zip(timestamps, values))
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=bytes.decode))
     .with_native_timestamps(100)
     .grouping_key(lambda word: word)
     .window(WindowDefinition.tumbling(1000))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.kafka(sink_topic, servers, value_fn=lambda w: json.dumps([w.start, w.key, w.result]))))
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs", restart_delay_ms=100) as cluster:
        job = cluster.new_job(p, EXACTLY_ONCE)
        third = count // 3
        produce_slowly(servers, source_topic, 4, values[:third], timestamps=timestamps[:third])
        wait_until(lambda: committed_values(servers, sink_topic), WAIT_S, "first windows")
        cluster.kill_member(1)
        wait_until(lambda: job.info()["restarts"] >= 1, WAIT_S, "the first restart")
        produce_slowly(servers, source_topic, 4, values[third:2 * third], timestamps=timestamps[third:2 * third])
        cluster.kill_member(1)  # member 0 serves this test's client: the other one, again
        wait_until(lambda: job.info()["restarts"] >= 2, WAIT_S, "the second restart")
        produce_slowly(servers, source_topic, 4, values[2 * third:], timestamps=timestamps[2 * third:])
        produce(servers, source_topic, [(partition, None, b"closing") for partition in range(4)], closing)
        got = wait_committed(servers, sink_topic, 1, len(oracle))
        job.cancel()
    results = Counter()
    for value in got:
        start, word, total = json.loads(value)
        if word != "closing":
            assert (start, word) not in results, f"window {(start, word)} committed twice"
            results[(start, word)] = total
    assert results == oracle


def test_an_undecodable_record_fails_the_job_naming_it_and_keeps_what_was_committed(kafka_broker, new_topic,
                                                                                    tmp_path):
    servers = kafka_broker.bootstrap_servers
    source_topic, sink_topic = new_topic(1), new_topic(1)
    good = [json.dumps({"n": i}) for i in range(500)]
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=json.loads))
     .with_native_timestamps(0)
     .map(lambda record: record["n"])
     .write_to(Sinks.kafka(sink_topic, servers, value_fn=str)))
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs") as cluster:
        job = cluster.new_job(p, EXACTLY_ONCE)
        produce(servers, source_topic, [(0, None, value.encode()) for value in good])
        wait_committed(servers, sink_topic, 1, len(good))
        produce(servers, source_topic, [(0, None, b"{not json")])
        with pytest.raises(Exception) as failed:
            job.join(timeout=WAIT_S)
    message = str(failed.value)
    assert f"topic {source_topic!r} partition 0 offset 500" in message, message
    assert "JSONDecodeError" in message, message
    assert sorted(int(v) for v in committed_values(servers, sink_topic)) == list(range(500)), "nothing lost"
