"""Kafka transactions as a :class:`~jet.connectors.transaction_pool.TransactionalResource`.

One producer per ``transactional.id`` (the pool's deterministic ids). Phase 1 flushes the
transaction (every record acknowledged, still invisible to ``read_committed`` readers); phase 2
commits it.

**Committing after a restore.** Jet and Flink commit a transaction that a dead producer prepared
by *resuming* it: they set the old producer id and epoch into a new producer by reflection
(Jet's ``ResumeTransactionUtil``, Flink's ``FlinkKafkaInternalProducer.resumeTransaction``).
librdkafka (under confluent-kafka) has no such call: a new producer can only
``init_transactions()``, which fences the old one and **aborts** its open transaction (or
finishes a commit the old one had already asked for). So a transaction cannot be carried
across a restart here. Instead:

- every transaction carries a *commit marker*: ``send_offsets_to_transaction`` commits offset
  ``number`` (unique per transaction) on partition 0 of the sink's topic for the consumer group
  ``<transactional.id>.marker``; Kafka makes that offset commit part of the transaction, so it
  is visible exactly when the transaction's records are;
- phase 1 saves the transaction's records (keys and values, as bytes) and its number in the
  snapshot;
- a restore ``init_transactions()`` the id (which settles the old transaction one way or the
  other), then reads the marker group's committed offset: equal to the number → the transaction
  committed, nothing to do; otherwise it was aborted → the saved records are written again in a
  new transaction (with the marker) and committed.

The cost: the records of one snapshot interval are kept in memory and in the snapshot. The
output of windowed aggregations is small; for a sink of millions of records per interval keep
the snapshot interval short or use at-least-once. Records re-written after a restore get new
offsets and timestamps.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from jet.connectors.kafka.client_config import TRANSACTION_TIMEOUT_S
from jet.connectors.kafka.delivery import DeliveryWatch

log = logging.getLogger("jet.connectors.kafka.transactions")
_MAX_PARALLEL_ABORTS = 8
MARKER_RECHECK_PAUSES_S = (0.2, 0.5, 1.0)
"""Pauses between reads of a transaction's marker before it is taken as not committed."""


class PreparedKafkaTransaction(NamedTuple):
    """What phase 1 saves in the snapshot for one transaction."""

    number: int
    records: list  # (key bytes | None, value bytes | None)


class KafkaTransactions:
    """The Kafka side of a transactional sink processor (see the module docstring)."""

    def __init__(self, delivery: DeliveryWatch, producer_config: dict, consumer_config: dict) -> None:
        self._delivery = delivery
        self._topic = delivery.topic
        self._producer_config = producer_config
        self._consumer_config = consumer_config
        self._producers: dict[str, Any] = {}  # id -> producer ready for begin_transaction
        self._open: dict[str, Any] = {}  # id -> producer inside a transaction
        self._records: dict[str, list] = {}  # id -> records of its open transaction
        self._numbers: dict[str, int] = {}
        self._last_number = 0

    # -- writing --------------------------------------------------------------------------------
    def produce(self, txn_id: str, key: bytes | None, value: bytes | None) -> None:
        """Write one record into the open transaction ``txn_id``."""
        self._delivery.produce(self._open[txn_id], key, value)
        self._records[txn_id].append((key, value))

    # -- TransactionalResource ------------------------------------------------------------------
    def begin(self, txn_id: str) -> None:
        producer = self._producers.pop(txn_id, None) or self._initialized_producer(txn_id)
        producer.begin_transaction()
        self._open[txn_id] = producer
        self._records[txn_id] = []
        self._numbers[txn_id] = self._next_number()

    def prepare(self, txn_id: str) -> PreparedKafkaTransaction:
        producer = self._open[txn_id]
        self._delivery.flush(producer, TRANSACTION_TIMEOUT_S)
        number = self._numbers[txn_id]
        self._send_marker(producer, txn_id, number)
        return PreparedKafkaTransaction(number, self._records.pop(txn_id))

    def commit(self, txn_id: str, prepared: PreparedKafkaTransaction) -> None:
        producer = self._open.pop(txn_id, None)
        if producer is not None:  # prepared by this very producer: phase 2 as Kafka means it
            producer.commit_transaction(TRANSACTION_TIMEOUT_S)
            self._producers[txn_id] = producer
            return
        producer = self._initialized_producer(txn_id)  # settles what an earlier producer left
        if not self._marker_shows(txn_id, prepared.number):
            log.info("Kafka sink: transaction %s (%d records) was not committed before the restart;"
                     " writing its records again", txn_id, len(prepared.records))
            producer.begin_transaction()
            for key, value in prepared.records:
                self._delivery.produce(producer, key, value)
            self._delivery.flush(producer, TRANSACTION_TIMEOUT_S)
            self._send_marker(producer, txn_id, prepared.number)
            producer.commit_transaction(TRANSACTION_TIMEOUT_S)
        self._producers[txn_id] = producer

    def abort(self, txn_ids: list[str]) -> None:
        fresh = []
        for txn_id in txn_ids:
            producer = self._open.pop(txn_id, None)
            self._records.pop(txn_id, None)
            if producer is not None:
                producer.abort_transaction(TRANSACTION_TIMEOUT_S)
                self._producers[txn_id] = producer
            elif txn_id not in self._producers:
                fresh.append(txn_id)
        if not fresh:
            return
        # init_transactions fences and aborts what an earlier producer of the id left open; it
        # takes a round trip or more per id, so the ids are settled in parallel.
        with ThreadPoolExecutor(min(_MAX_PARALLEL_ABORTS, len(fresh)), thread_name_prefix="kafka-abort") as pool:
            list(pool.map(self._initialized_producer, fresh))  # dropped: a begin makes its own

    def close(self) -> None:
        for producer in list(self._producers.values()) + list(self._open.values()):
            producer.flush(0)
        self._producers.clear()
        self._open.clear()

    # -- helpers --------------------------------------------------------------------------------
    def _initialized_producer(self, txn_id: str) -> Any:
        from confluent_kafka import Producer
        producer = Producer({**self._producer_config, "transactional.id": txn_id})
        producer.init_transactions(TRANSACTION_TIMEOUT_S)
        return producer

    def _next_number(self) -> int:
        # Unique per transaction, also across restarts and members: microseconds of the wall
        # clock, bumped when two transactions begin within one microsecond.
        self._last_number = max(self._last_number + 1, time.time_ns() // 1000)
        return self._last_number

    def _marker_consumer(self, txn_id: str) -> Any:
        from confluent_kafka import Consumer
        return Consumer({**self._consumer_config, "group.id": f"{txn_id}.marker", "enable.auto.commit": False})

    def _send_marker(self, producer: Any, txn_id: str, number: int) -> None:
        from confluent_kafka import TopicPartition
        consumer = self._marker_consumer(txn_id)
        try:
            producer.send_offsets_to_transaction([TopicPartition(self._topic, 0, number)],
                                                 consumer.consumer_group_metadata(), TRANSACTION_TIMEOUT_S)
        finally:
            consumer.close()

    def _marker_shows(self, txn_id: str, number: int) -> bool:
        """Whether the marker group's committed offset says transaction ``number`` committed.

        ``init_transactions`` may have just finished a commit the dead producer had asked for,
        and a broker can answer the offset fetch from before that for a moment (seen with tansu
        under load: records then written twice), so a marker that does not show it yet is read
        again a few times before the records are written anew."""
        for pause_s in MARKER_RECHECK_PAUSES_S:
            if self._committed_marker(txn_id) == number:
                return True
            time.sleep(pause_s)
        return self._committed_marker(txn_id) == number

    def _committed_marker(self, txn_id: str) -> int | None:
        from confluent_kafka import TopicPartition
        consumer = self._marker_consumer(txn_id)
        try:
            [committed] = consumer.committed([TopicPartition(self._topic, 0)], timeout=TRANSACTION_TIMEOUT_S)
        finally:
            consumer.close()
        return committed.offset if committed.offset >= 0 else None
