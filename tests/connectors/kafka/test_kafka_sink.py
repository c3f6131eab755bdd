"""The Kafka sink processor on a real broker, driven through the snapshot phases by hand.

What a ``read_committed`` reader sees is computed from the topic's raw log (transaction markers
included; see ``raw_log``), because tansu's own read_committed filtering cannot be trusted. A
crash is a processor abandoned without ``close()``; a new one restores the snapshot's entries.
"""

from __future__ import annotations

import json
import pickle

import pytest
from jet import Sinks
from jet.connectors.kafka.delivery import KafkaDeliveryError
from jet.connectors.kafka.metadata import KafkaTopicMissingError
from jet.connectors.kafka.records import to_bytes
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.job_config import ProcessingGuarantee

from tests.connectors.kafka.kafka_support import committed_log, committed_values, read_values
from tests.connectors.test_exactly_once_files import feed, restore_into
from tests.connectors.test_exactly_once_files import phase1 as saved_in_phase1

EXACTLY_ONCE, AT_LEAST_ONCE = ProcessingGuarantee.EXACTLY_ONCE, ProcessingGuarantee.AT_LEAST_ONCE


def start(sink, index: int = 0, total: int = 1, guarantee=EXACTLY_ONCE, restore: list | None = None, job="sink-job"):
    processor = sink.supplier()
    processor.init(Outbox(0), Context(vertex_name="out", job_id=job, local_index=index, local_parallelism=total,
                                      processing_guarantee=guarantee))
    if restore is not None:
        restore_into(processor, restore)
    return processor


def phase1(processor) -> list:
    """The entries phase 1 saved, through pickle as the snapshot store keeps them."""
    return pickle.loads(pickle.dumps(saved_in_phase1(processor)))


def test_the_default_serializer_takes_bytes_str_and_json():
    assert to_bytes(b"\x00raw") == b"\x00raw"
    assert to_bytes("wörd") == "wörd".encode()
    assert to_bytes(None) is None
    assert to_bytes({"word": "a", "count": 2}) == b'{"word":"a","count":2}'
    assert to_bytes(("a", 2)) == b'["a",2]'


def test_at_least_once_writes_every_item_with_its_key_by_completion(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(2)
    sink = start(Sinks.kafka(topic, servers, key_fn=lambda item: item["word"]), guarantee=AT_LEAST_ONCE)
    items = [{"word": f"w{i % 7}", "n": i} for i in range(300)]
    feed(sink, items[:100])
    assert phase1(sink) == []  # at-least-once saves nothing: it flushes
    feed(sink, items[100:])
    assert sink.complete() is True
    sink.close()
    assert sorted(json.loads(v)["n"] for v in read_values(servers, topic, 2)) == list(range(300))
    for log in committed_log(servers, topic, 2):  # one word, one partition (the key's hash)
        words = {json.loads(record.value)["word"] for record in log.committed}
        assert all(record.key.decode() in words for record in log.committed)
    partitions_of_words = [{json.loads(r.value)["word"] for r in log.committed} for log in committed_log(servers, topic, 2)]
    assert not (partitions_of_words[0] & partitions_of_words[1])


def test_exactly_once_makes_records_visible_only_at_phase_2(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    sink = start(Sinks.kafka(topic, servers, value_fn=str))
    feed(sink, range(10))
    entries = phase1(sink)
    feed(sink, range(10, 15))  # the next transaction, not prepared yet
    [log] = committed_log(servers, topic, 1)
    assert log.committed == [] and len(log.open) == 10, "prepared: written, not committed"
    assert [key.key[0] for key, _ in entries] == ["kafka-txn"]
    assert sink.snapshot_commit_finish(True) is True
    assert committed_values(servers, topic) == [str(i).encode() for i in range(10)]
    phase1(sink)
    sink.snapshot_commit_finish(True)
    sink.close()
    assert sorted(int(v) for v in committed_values(servers, topic)) == list(range(15))


def test_a_restore_commits_what_the_lost_job_prepared_and_aborts_the_rest(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    lost = start(Sinks.kafka(topic, servers, value_fn=str), job="restore-job")
    feed(lost, range(20))
    snapshot = phase1(lost)  # the snapshot completed; the job died before phase 2 reached the sink
    feed(lost, range(20, 30))  # open when the job died; the restored source replays these
    restored = start(Sinks.kafka(topic, servers, value_fn=str), job="restore-job", restore=snapshot)
    assert sorted(int(v) for v in committed_values(servers, topic)) == list(range(20))
    feed(restored, range(20, 30))
    phase1(restored)
    restored.snapshot_commit_finish(True)
    restored.close()
    [log] = committed_log(servers, topic, 1)
    assert sorted(int(r.value) for r in log.committed) == list(range(30)), "each number exactly once"
    assert log.open == [], "no transaction left open"
    # init_transactions of the restored producer aborted the prepared one (librdkafka cannot resume
    # it), so its records were written again from the snapshot; and the open one was aborted
    assert sorted(int(r.value) for r in log.aborted) == list(range(30))


def test_a_restore_after_phase_2_ran_commits_nothing_twice(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    first = start(Sinks.kafka(topic, servers, value_fn=str), job="twice-job")
    feed(first, range(5))
    snapshot = phase1(first)
    first.snapshot_commit_finish(True)
    restored = start(Sinks.kafka(topic, servers, value_fn=str), job="twice-job", restore=snapshot)
    restored.close()
    assert sorted(int(v) for v in committed_values(servers, topic)) == list(range(5))


def test_a_restore_on_fewer_processors_commits_every_prepared_transaction(kafka_broker, new_topic):
    servers = kafka_broker.bootstrap_servers
    topic = new_topic(1)
    sink = Sinks.kafka(topic, servers, value_fn=str)
    snapshot = []
    for index in range(3):
        lost = start(sink, index, 3, job="shrink-job")
        feed(lost, range(index * 100, index * 100 + 10))
        snapshot += phase1(lost)
        feed(lost, [f"open{index}"])
    restored = [start(sink, index, 2, job="shrink-job", restore=snapshot) for index in range(2)]
    for processor in restored:
        processor.close()
    [log] = committed_log(servers, topic, 1)
    assert sorted(int(r.value) for r in log.committed) == sorted(i * 100 + j for i in range(3) for j in range(10))
    assert log.open == [], "processor 2's open transaction was aborted by its new owner, processor 0"


def test_a_missing_sink_topic_fails_at_submission(kafka_broker):
    with pytest.raises(KafkaTopicMissingError, match="'no-such-output'"):
        Sinks.kafka("no-such-output", kafka_broker.bootstrap_servers).preflight()


def test_a_record_kafka_refuses_fails_the_sink_naming_the_topic(kafka_broker, new_topic):
    topic = new_topic(1)
    sink = start(Sinks.kafka(topic, kafka_broker.bootstrap_servers), guarantee=AT_LEAST_ONCE)
    with pytest.raises(KafkaDeliveryError, match=f"record of 2000000 bytes to topic {topic!r} at"
                                                 f" {kafka_broker.bootstrap_servers} failed: .*too large"):
        feed(sink, [b"x" * 2_000_000])
    sink.close()


def test_a_key_function_returning_something_else_than_bytes_or_str_fails_clearly(kafka_broker, new_topic):
    topic = new_topic(1)
    sink = start(Sinks.kafka(topic, kafka_broker.bootstrap_servers, key_fn=lambda item: item), guarantee=AT_LEAST_ONCE)
    with pytest.raises(TypeError, match="the key function must return bytes, str or None, got int"):
        feed(sink, [1])
    sink.close()
