"""``WriteKafkaP``: the Kafka sink processor (Jet's ``WriteKafkaP``), idempotent or transactional.

- **At-least-once** (a job without exactly-once, or ``exactly_once=False``): one idempotent
  producer (``enable.idempotence``: no duplicates from the producer's own retries); phase 1 of
  a snapshot and completion wait until every record is acknowledged, so what a snapshot covers
  is in Kafka. After a restart the records since the snapshot are written again.
- **Exactly-once**: Kafka transactions under the two snapshot phases through
  :class:`~jet.connectors.transaction_pool.TransactionPool`: a transaction per processor per
  snapshot, ``transactional.id`` = ``jet-kafka-<job id>-<vertex>-<processor index>-<slot>``.
  Readers must use ``isolation.level=read_committed`` (librdkafka's default). How a restore
  commits is in :mod:`.transactions`.

The processor runs on a thread of its own (flushes and commits block, each bounded by a timeout).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from jet.connectors.kafka.client_config import client_settings, for_consumer, redacted
from jet.connectors.kafka.delivery import DeliveryWatch
from jet.connectors.kafka.records import to_bytes
from jet.connectors.kafka.transactions import KafkaTransactions
from jet.connectors.transaction_pool import TransactionPool, default_prefix
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark
from jet.job_config import ProcessingGuarantee

POOL_TAG = "kafka-txn"


@dataclass(frozen=True)
class KafkaSinkSpec:
    """What ``Sinks.kafka`` was given (picklable: it travels with the DAG)."""

    topic: str
    bootstrap_servers: str
    key_fn: Callable[[Any], Any] | None = None
    value_fn: Callable[[Any], Any] | None = None
    exactly_once: bool | None = None
    client_config: dict = field(default_factory=dict)


class WriteKafkaP(Processor):
    """Writes every item as one record (see the module docstring)."""

    is_cooperative = False

    def __init__(self, spec: KafkaSinkSpec) -> None:
        self._spec = spec
        self._producer: Any = None
        self._txns: KafkaTransactions | None = None
        self._pool: TransactionPool | None = None

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        spec = self._spec
        exactly_once = (context.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE
                        and spec.exactly_once is not False)
        producer_config = client_settings(spec.bootstrap_servers, spec.client_config, **{
            "enable.idempotence": True, "linger.ms": 5})
        context.logger.debug("Kafka sink: topic %r, %s, producer settings %s", spec.topic,
                             "transactional" if exactly_once else "idempotent", redacted(producer_config))
        self._delivery = DeliveryWatch(spec.topic, spec.bootstrap_servers)
        if exactly_once:
            consumer_config = client_settings(spec.bootstrap_servers, for_consumer(spec.client_config))
            self._txns = KafkaTransactions(self._delivery, producer_config, consumer_config)
            self._pool = TransactionPool(self._txns, context, default_prefix(context, "kafka"), tag=POOL_TAG)
        else:
            from confluent_kafka import Producer
            self._producer = Producer(producer_config)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        spec = self._spec
        key_fn, value_fn = spec.key_fn, spec.value_fn or to_bytes
        records = [(None if key_fn is None else _serialized(key_fn(item), "key"), _serialized(value_fn(item), "value"))
                   for item in inbox.take_chunk()]
        if self._pool is not None:
            txn_id = self._pool.active_id()
            for key, value in records:
                self._txns.produce(txn_id, key, value)
        else:
            producer = self._producer
            for key, value in records:
                self._delivery.produce(producer, key, value)
            producer.poll(0)
            self._delivery.check()  # a transaction's failed writes are written again at its prepare

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    # -- the snapshot phases and the end -----------------------------------------------------------
    def snapshot_commit_prepare(self) -> bool:
        if self._pool is not None:
            self._pool.snapshot_commit_prepare(self.outbox)
        elif self.context.snapshots_enabled:
            self._delivery.flush(self._producer)
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if self._pool is not None:
            self._pool.snapshot_commit_finish(success)
        return True

    def complete(self) -> bool:
        if self._pool is not None:
            self._pool.complete()
        else:
            self._delivery.flush(self._producer)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for key, value in inbox.take_chunk():
            if self._pool is None or not self._pool.is_pool_key(key):
                raise ValueError(f"sink {self.context.vertex_name!r}: unexpected snapshot entry {key!r}"
                                 f" (was the job exactly-once when the snapshot was taken?)")
            self._pool.restore_entry(key, value)

    def finish_snapshot_restore(self) -> bool:
        if self._pool is not None:
            self._pool.finish_snapshot_restore()
        return True

    def close(self) -> None:
        if self._pool is not None:
            try:
                self._pool.close()
            finally:
                self._txns.close()
        elif self._producer is not None:
            self._producer.flush(0)


def _serialized(value: Any, what: str) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(f"Kafka sink: the {what} function must return bytes, str or None, got {type(value).__name__}")

