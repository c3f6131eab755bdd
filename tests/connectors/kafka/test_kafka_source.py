"""The Kafka source processor on a real broker, driven by hand as the engine drives it.

The oracle is the list of records the test produced; the processors' output must hold each
exactly once, also across a snapshot restored into another parallelism.
"""

from __future__ import annotations

import logging
import os
import time

import pytest

from jet import Sources
from jet.connectors.kafka.metadata import KafkaTopicMissingError, KafkaUnavailableError
from jet.connectors.kafka.ownership import owned_partitions, owner_of
from jet.connectors.kafka.records import KafkaRecord
from jet.connectors.kafka.source import KafkaRecordError
from jet.core.event_time import EventTimePolicy
from jet.core.outbox import MIN_SNAPSHOT_PORTION
from jet.core.processor import Context
from jet.core.special_items import IDLE_MESSAGE, Watermark
from jet.job_config import ProcessingGuarantee
from tests.connectors.kafka.kafka_support import add_partitions, create_topic, produce
from tests.core.snapshot_driver import Driven

READ_TIMEOUT_S = 30.0


def context(index: int, total: int, guarantee=ProcessingGuarantee.EXACTLY_ONCE) -> Context:
    return Context(vertex_name="kafka-source", job_id="source-test", local_index=index, local_parallelism=total,
                   processing_guarantee=guarantee)


def start(source, total: int, policy=None, guarantee=ProcessingGuarantee.EXACTLY_ONCE, restore=None) -> list[Driven]:
    supplier = source.policy_supplier(policy)
    if restore is None:
        return [Driven(supplier, context(i, total, guarantee)) for i in range(total)]
    return [Driven.restored(supplier, context(i, total, guarantee), restore) for i in range(total)]


def items_of(driven: Driven) -> list:
    return [item for item in driven.output if not isinstance(item, Watermark)]


def read_until(drivens: list[Driven], count: int, timeout_s: float = READ_TIMEOUT_S) -> None:
    """Call every processor until together they emitted ``count`` items."""
    deadline = time.monotonic() + timeout_s
    while sum(len(items_of(d)) for d in drivens) < count:
        assert time.monotonic() < deadline, f"read {sum(len(items_of(d)) for d in drivens)} of {count} items"
        for driven in drivens:
            driven.complete(calls=1)
        time.sleep(0.002)


def records(topic_partitions: int, count: int, prefix: str = "v") -> list[tuple[int, bytes, bytes]]:
    return [(i % topic_partitions, f"k{i}".encode(), f"{prefix}{i}".encode()) for i in range(count)]


def close_all(drivens: list[Driven]) -> None:
    for driven in drivens:
        driven.processor.close()


def test_ownership_spreads_topics_and_gives_every_partition_one_owner():
    topics = ["a", "b"]
    counts = {"a": 3, "b": 5}
    owners = [owned_partitions(topics, counts, index, 3) for index in range(3)]
    every = sorted(tp for owned in owners for tp in owned)
    assert every == sorted([("a", p) for p in range(3)] + [("b", p) for p in range(5)])
    assert owner_of(1, 2, 0, 4) == 2  # the second topic starts halfway


def test_three_processors_read_every_partition_of_two_topics_exactly_once(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    first, second = new_topic(5), new_topic(2)
    produce(servers, first, records(5, 200, "a"))
    produce(servers, second, records(2, 60, "b"))
    drivens = start(Sources.kafka([first, second], servers, value_fn=bytes.decode), 3)
    try:
        read_until(drivens, 260)
        time.sleep(0.3)
        for driven in drivens:
            driven.complete(calls=3)
    finally:
        close_all(drivens)
    got = [item for driven in drivens for item in items_of(driven)]
    assert sorted(got) == sorted([f"a{i}" for i in range(200)] + [f"b{i}" for i in range(60)])
    assert all(items_of(driven) for driven in drivens), "every processor owns some partition"


def test_offsets_restored_into_another_parallelism_lose_and_repeat_nothing(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(4)
    produce(servers, topic, records(4, 400))
    source = Sources.kafka(topic, servers, value_fn=bytes.decode)
    before = start(source, 3)
    read_until(before, 100)
    while not all(items_of(driven) for driven in before):  # each processor past its first read
        read_until(before, sum(len(items_of(d)) for d in before) + 1)
    snapshot = [entry for driven in before for entry in driven.save()]
    kept = [item for driven in before for item in items_of(driven)]
    produce(servers, topic, records(4, 200, "later"))
    read_until(before, len(kept) + 50)  # emitted after the snapshot: lost with the crash, replayed
    close_all(before)
    assert len(snapshot) == 4 and {key.key[0] for key, _ in snapshot} == {"kafka-offset"}
    after = start(source, 2, restore=snapshot)
    try:
        read_until(after, 600 - len(kept))
        time.sleep(0.3)
        for driven in after:
            driven.complete(calls=3)
    finally:
        close_all(after)
    got = kept + [item for driven in after for item in items_of(driven)]
    expected = [f"v{i}" for i in range(400)] + [f"later{i}" for i in range(200)]
    assert sorted(got) == sorted(expected)


def test_a_processor_saves_the_offsets_of_more_partitions_than_one_call_may_offer(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    partitions = MIN_SNAPSHOT_PORTION + 5
    topic = new_topic(partitions)
    produce(servers, topic, records(partitions, 4 * partitions))
    source = Sources.kafka(topic, servers, value_fn=bytes.decode)
    (before,) = start(source, 1)
    read_until([before], 4 * partitions)
    before.outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION  # what the engine allows after a first portion
    snapshot = before.save()
    close_all([before])
    assert before.save_calls > 1
    assert sorted(key.key[2] for key, _ in snapshot) == list(range(partitions))
    produce(servers, topic, records(partitions, partitions, "later"))
    (after,) = start(source, 1, restore=snapshot)
    try:
        read_until([after], partitions)
        time.sleep(0.3)
        after.complete(calls=3)
    finally:
        close_all([after])
    assert sorted(items_of(after)) == sorted(f"later{i}" for i in range(partitions))  # nothing read again


def test_partitions_added_while_the_source_runs_are_read_within_seconds(any_broker):
    """Skipped on tansu (no CreatePartitions); run on noida-db, which has it."""
    servers = any_broker.bootstrap_servers
    topic = f"grow{os.getpid()}-{time.monotonic_ns()}"
    create_topic(servers, topic, 2)
    produce(servers, topic, records(2, 20))
    drivens = start(Sources.kafka(topic, servers, value_fn=bytes.decode, metadata_poll_ms=500), 2)
    try:
        read_until(drivens, 20)
        started = time.monotonic()
        if not add_partitions(servers, topic, 4):
            pytest.skip("the broker has no CreatePartitions (tansu 0.6); the noida-db run of this test covers it")
        produce(servers, topic, [(3, None, b"on-new-3"), (2, None, b"on-new-2")])
        read_until(drivens, 22, timeout_s=15)
        assert time.monotonic() - started < 10
    finally:
        close_all(drivens)
    got = [item for driven in drivens for item in items_of(driven)]
    assert sorted(got) == sorted([f"v{i}" for i in range(20)] + ["on-new-2", "on-new-3"])
    # partition p is owned by processor p % 2: each new partition went to its owner
    assert "on-new-2" in items_of(drivens[0]) and "on-new-3" in items_of(drivens[1])


def test_the_watermark_is_the_minimum_over_partitions_until_one_goes_idle(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(2)
    base = 1_700_000_000_000
    produce(servers, topic, [(0, None, b"early"), (1, None, b"late")], timestamps=[base + 1_000, base + 5_000])
    policy = EventTimePolicy(allowed_lag_ms=0, idle_timeout_ms=1_500, frame_size_ms=1)
    [driven] = start(Sources.kafka(topic, servers), 1, policy)
    try:
        read_until([driven], 2)
        pairs = items_of(driven)
        assert sorted(pairs) == [(base + 1_000, b"early"), (base + 5_000, b"late")]
        watermarks = [item.timestamp for item in driven.output if isinstance(item, Watermark)
                      and item is not IDLE_MESSAGE]
        assert max(watermarks) == base + 1_000, "partition 0 holds the watermark back"
        produce(servers, topic, [(1, None, b"later")], timestamps=[base + 9_000])
        deadline = time.monotonic() + 10
        while not any(isinstance(i, Watermark) and i.timestamp == base + 9_000 for i in driven.output):
            assert time.monotonic() < deadline, "partition 0 never went idle"
            driven.complete(calls=1)
            time.sleep(0.01)
    finally:
        driven.processor.close()


def test_record_fn_gives_the_whole_record(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    produce(servers, topic, [(0, b"key", b"value")], timestamps=[1_700_000_000_123])
    [driven] = start(Sources.kafka(topic, servers, record_fn=lambda record: record), 1)
    try:
        read_until([driven], 1)
    finally:
        driven.processor.close()
    [record] = items_of(driven)
    assert record == KafkaRecord(b"key", b"value", topic, 0, 0, 1_700_000_000_123, None)


def test_an_undecodable_record_fails_naming_where_it_is_with_the_users_error_as_cause(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    produce(servers, topic, [(0, None, b'{"ok": 1}'), (0, None, b"not json")])
    import json
    [driven] = start(Sources.kafka(topic, servers, value_fn=json.loads), 1)
    try:
        with pytest.raises(KafkaRecordError) as raised:
            read_until([driven], 2)
    finally:
        driven.processor.close()
    message = str(raised.value)
    assert f"topic {topic!r} partition 0 offset 1" in message and servers in message and "value_fn" in message
    assert isinstance(raised.value.__cause__, json.JSONDecodeError)


def test_without_a_guarantee_a_group_starts_from_its_committed_offsets(kafka_broker, new_topic):
    from confluent_kafka import Consumer, TopicPartition
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    produce(servers, topic, records(1, 10))
    group = f"{topic}-group"
    committer = Consumer({"bootstrap.servers": servers, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 6)], asynchronous=False)
    committer.close()
    [driven] = start(Sources.kafka(topic, servers, group, value_fn=bytes.decode), 1,
                     guarantee=ProcessingGuarantee.NONE)
    try:
        read_until([driven], 4)
        time.sleep(0.2)
        driven.complete(calls=3)
    finally:
        driven.processor.close()
    assert items_of(driven) == [f"v{i}" for i in range(6, 10)]


def test_a_missing_topic_or_unreachable_brokers_fail_at_submission_naming_them(kafka_broker):
    servers = kafka_broker.bootstrap_servers
    with pytest.raises(KafkaTopicMissingError, match=f"'no-such-topic' do not exist on the Kafka brokers {servers}"):
        Sources.kafka("no-such-topic", servers).preflight()
    started = time.monotonic()
    with pytest.raises(KafkaUnavailableError, match="127.0.0.1:1 did not answer a metadata request within 10 s"):
        Sources.kafka("topic", "127.0.0.1:1", sasl_password="hunter2").preflight()
    assert time.monotonic() - started < 15


def test_credentials_never_reach_the_logs(kafka_broker, new_topic, caplog):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    with caplog.at_level(logging.DEBUG):
        [driven] = start(Sources.kafka(topic, servers, sasl_username="jet", sasl_password="hunter2"), 1)
        driven.processor.close()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "sasl.username" in logged and "'sasl.password': '***'" in logged
    assert "hunter2" not in logged


def test_a_source_whose_topic_vanished_before_it_started_fails_clearly(kafka_broker):
    servers = kafka_broker.bootstrap_servers
    [driven] = start(Sources.kafka("gone-topic", servers), 1)
    try:
        with pytest.raises(KafkaTopicMissingError, match="'gone-topic'"):
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                driven.complete(calls=1)
                time.sleep(0.01)
    finally:
        driven.processor.close()
