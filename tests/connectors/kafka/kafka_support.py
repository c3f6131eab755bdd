"""Helpers of the Kafka tests: topics, producing input, reading output (all on the real broker)."""

from __future__ import annotations

import time

from tests.connectors.kafka.raw_log import PartitionLog, read_partition


def create_topic(servers: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def add_partitions(servers: str, name: str, partitions: int) -> bool:
    """Give the topic ``partitions`` partitions; False when the broker cannot (tansu 0.6 has no
    CreatePartitions)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions
    admin = AdminClient({"bootstrap.servers": servers})
    try:
        admin.create_partitions([NewPartitions(name, partitions)])[name].result(10)
        return True
    except KafkaException as error:
        if error.args[0].code() != KafkaError._UNSUPPORTED_FEATURE:
            raise
        return False


def produce(servers: str, topic: str, records: list[tuple[int, bytes | None, bytes]],
            timestamps: list[int] | None = None) -> None:
    """Write ``(partition, key, value)`` records (with ``timestamps`` in ms if given)."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
    for index, (partition, key, value) in enumerate(records):
        extra = {} if timestamps is None else {"timestamp": timestamps[index]}
        producer.produce(topic, value, key, partition=partition, **extra)
    assert producer.flush(30) == 0


def read_values(servers: str, topic: str, partitions: int, timeout_s: float = 10) -> list[bytes]:
    """Every record value of the topic up to its current end (read_uncommitted)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "jet-test-reader", "enable.auto.commit": False,
                         "isolation.level": "read_uncommitted"})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions) if ends[p]])
        values, done = [], {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout_s
        while len(done) < partitions and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.2):
                if message.error() is None:
                    values.append(message.value())
                    if message.offset() + 1 >= ends[message.partition()]:
                        done.add(message.partition())
        return values
    finally:
        consumer.close()


def committed_log(servers: str, topic: str, partitions: int) -> list[PartitionLog]:
    return [read_partition(servers, topic, partition) for partition in range(partitions)]


def committed_values(servers: str, topic: str, partitions: int = 1) -> list[bytes]:
    """What a read_committed reader must see, from the raw log (see raw_log)."""
    return [record.value for log in committed_log(servers, topic, partitions) for record in log.committed]
