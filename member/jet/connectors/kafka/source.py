"""``StreamKafkaP``: the cooperative Kafka source processor (Jet's ``StreamKafkaP``).

Each processor reads the topic partitions the job gives it (:mod:`.ownership`) with
``assign()``, never a group subscription, and polls with ``consume(timeout=0)``, so a call never
waits for the network. Metadata is fetched every ``metadata_poll_ms`` on a worker thread
(:mod:`.metadata`); a partition that appears is read from its beginning.

Where a partition starts: the offset the restored snapshot saved for it; else, on a job's first
start with a ``group_id``, the group's committed offset; else ``auto.offset.reset`` (default
earliest). Partitions found later start at their beginning.

Snapshots save, per topic partition, the next offset to read (or, for a partition not read
yet, where it starts: beginning, end or the group's offset) and the partition's watermark under ``BroadcastKey(("kafka-offset", topic, partition))``; every processor of the restored
vertex receives them all and keeps the partitions it owns now.

With an event-time policy the record's timestamp is the native one; each owned partition is a
partition of the processor's :class:`~jet.core.event_time.EventTimeMapper`, so the processor's
watermark is the minimum over its partitions that are not idle.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from jet.connectors.kafka.client_config import (BROKER_OUTAGE_S, DEFAULT_METADATA_POLL_MS, client_settings,
                                                for_admin, redacted)
from jet.connectors.kafka.metadata import PartitionCountPoller, fetch_partition_counts, require_topics
from jet.connectors.kafka.ownership import owned_partitions, owner_of
from jet.connectors.kafka.records import KafkaRecord
from jet.connectors.stream_emitter import StreamEmitter, wall_clock_ms
from jet.core.event_time import EventTimePolicy
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.processors.snapshot_state import SnapshotSaver
from jet.core.snapshot_keys import BroadcastKey
from jet.job_config import ProcessingGuarantee

OFFSET_TAG = "kafka-offset"
CONSUME_BATCH = 1024
"""Most records taken from the client per call."""
_EARLIEST = {"earliest", "smallest", "beginning"}


class KafkaRecordError(ValueError):
    """A record the source could not turn into an item (names where it is)."""


class KafkaSourceError(RuntimeError):
    """The Kafka client reported an error for a partition this source reads."""


@dataclass(frozen=True)
class KafkaSourceSpec:
    """What ``Sources.kafka`` was given (picklable: it travels with the DAG)."""

    topics: tuple[str, ...]
    bootstrap_servers: str
    group_id: str | None = None
    value_fn: Callable[[bytes | None], Any] | None = None
    record_fn: Callable[[KafkaRecord], Any] | None = None
    client_config: dict = field(default_factory=dict)
    metadata_poll_ms: int = DEFAULT_METADATA_POLL_MS


class StreamKafkaP(Processor):
    """Reads its share of the topics' partitions (see the module docstring)."""

    def __init__(self, spec: KafkaSourceSpec, policy: EventTimePolicy | None) -> None:
        self._spec = spec
        self._policy = policy
        self._needs_native_ts = policy is not None and policy.timestamp_fn is None and not policy.ingestion
        self._consumer: Any = None
        self._poller: PartitionCountPoller | None = None
        self._owned: list[tuple[str, int]] = []  # in the mapper's partition order
        self._mapper_index: dict[tuple[str, int], int] = {}
        self._offsets: dict[tuple[str, int], int] = {}  # next offset to read
        self._restored_wms: dict[tuple[str, int], int] = {}
        self._restored = False
        self._known = False  # the first metadata arrived
        self._saver = SnapshotSaver()

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient
        spec = self._spec
        guarantee = context.processing_guarantee is not ProcessingGuarantee.NONE
        defaults: dict[str, Any] = {"group.id": spec.group_id or f"jet-{context.job_id}-{context.vertex_name}",
                                    "auto.offset.reset": "earliest", "enable.partition.eof": False,
                                    "allow.auto.create.topics": False}
        if guarantee or spec.group_id is None:
            defaults["enable.auto.commit"] = False
        config = client_settings(spec.bootstrap_servers, spec.client_config, **defaults)
        if guarantee:
            config["enable.auto.commit"] = False  # offsets live in the job's snapshots
        self._auto_offset_reset = str(config["auto.offset.reset"]).lower()
        context.logger.debug("Kafka source: topics %s, consumer settings %s", list(spec.topics), redacted(config))
        self._consumer = Consumer(config)
        admin = AdminClient(client_settings(spec.bootstrap_servers, for_admin(spec.client_config)))
        topics = list(spec.topics)
        self._poller = PartitionCountPoller(
            lambda: fetch_partition_counts(admin, topics, spec.bootstrap_servers), spec.metadata_poll_ms,
            give_up_s=BROKER_OUTAGE_S)
        self._emitter = StreamEmitter(self._policy, partitions=0)

    # -- reading -----------------------------------------------------------------------------------
    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox):
            return False
        counts = self._poller.poll()
        if counts is not None:
            self._on_partition_counts(counts)
        if not self._known:
            return False
        messages = self._consumer.consume(CONSUME_BATCH, timeout=0)
        now_ms = wall_clock_ms()
        if not messages:
            emitter.idle(now_ms)
        else:
            self._add(messages, now_ms)
        emitter.flush(self.outbox)
        return False

    def _add(self, messages: list, now_ms: int) -> None:
        by_partition: dict[tuple[str, int], tuple[list, list]] = {}
        offsets = self._offsets
        for message in messages:
            if message.error() is not None:
                self._fail_on(message)
            tp = (message.topic(), message.partition())
            batch = by_partition.get(tp)
            if batch is None:
                batch = by_partition[tp] = ([], [])
            batch[0].append(self._item_of(message))
            timestamp = message.timestamp()[1]
            if timestamp < 0 and self._needs_native_ts:
                raise KafkaRecordError(f"Kafka source: the record at {self._where(message)} has no timestamp;"
                                       f" use with_timestamps(fn, lag) or with_ingestion_timestamps()")
            batch[1].append(timestamp)
            offsets[tp] = message.offset() + 1
        for tp, (items, timestamps) in by_partition.items():
            self._emitter.add(items, self._mapper_index[tp], now_ms, timestamps)

    def _item_of(self, message: Any) -> Any:
        spec = self._spec
        try:
            if spec.record_fn is not None:
                return spec.record_fn(KafkaRecord(message.key(), message.value(), message.topic(),
                                                  message.partition(), message.offset(), message.timestamp()[1],
                                                  message.headers()))
            if spec.value_fn is not None:
                return spec.value_fn(message.value())
        except Exception as error:
            fn = "record_fn" if spec.record_fn is not None else "value_fn"
            raise KafkaRecordError(f"Kafka source: {fn} failed on the record at {self._where(message)}:"
                                   f" {type(error).__name__}: {error}") from error
        return message.value()

    def _where(self, message: Any) -> str:
        return (f"{self._spec.bootstrap_servers} topic {message.topic()!r} partition {message.partition()}"
                f" offset {message.offset()}")

    def _fail_on(self, message: Any) -> None:
        error = message.error()
        raise KafkaSourceError(f"Kafka source: reading topic {message.topic()!r} partition {message.partition()}"
                               f" from {self._spec.bootstrap_servers} failed: {error.str()}"
                               f" ({error.name()})")

    # -- partitions ------------------------------------------------------------------------------
    def _on_partition_counts(self, counts: dict[str, int]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TopicPartition
        spec, context = self._spec, self.context
        first = not self._known
        if first:
            require_topics(counts, list(spec.topics), spec.bootstrap_servers, "Kafka source")
        owned = owned_partitions(list(spec.topics), counts, context.global_index, context.total_parallelism)
        new = [tp for tp in owned if tp not in self._mapper_index]
        self._known = True
        if not new:
            return
        if first and not self._restored:
            start = OFFSET_STORED if spec.group_id is not None else (
                OFFSET_BEGINNING if self._auto_offset_reset in _EARLIEST else OFFSET_END)
        else:
            start = OFFSET_BEGINNING  # found while running (or not in the restored snapshot): read it all
        for tp in new:  # a partition not read yet is saved with where it starts (a logical offset)
            self._offsets.setdefault(tp, start)
        assignment = [TopicPartition(topic, partition, self._offsets[(topic, partition)]) for topic, partition in new]
        mapper = self._emitter.mapper
        for tp in new:
            self._mapper_index[tp] = len(self._owned)
            self._owned.append(tp)
        if mapper is not None:
            mapper.add_partitions(len(new), wall_clock_ms())
            restored = [(self._mapper_index[tp], self._restored_wms[tp]) for tp in new if tp in self._restored_wms]
            for index, watermark in restored:
                mapper.restore_watermark(index, watermark)
            if first and restored:
                mapper.last_emitted_wm = max(mapper.last_emitted_wm, min(wm for _, wm in restored))
        self._consumer.incremental_assign(assignment)
        if not first:
            context.logger.info("Kafka source: reading new partition(s) %s", ", ".join(f"{t}/{p}" for t, p in new))

    # -- snapshots -------------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        saver = self._saver
        if not saver.saving and (not self._emitter.flush(self.outbox) or self.outbox.pending_special is not None):
            return False  # what was read before the barrier goes downstream before it
        # in portions: a processor may own more partitions than one call may offer
        return saver.offer(self.outbox, self._offset_entries)

    def _offset_entries(self) -> Iterator[tuple[BroadcastKey, tuple[int, int | None]]]:
        mapper = self._emitter.mapper
        for tp, offset in self._offsets.items():
            index = self._mapper_index.get(tp)
            if index is not None and mapper is not None:
                watermark = mapper.get_watermark(index)
            else:
                watermark = self._restored_wms.get(tp)
            yield BroadcastKey((OFFSET_TAG,) + tp), (offset, watermark)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        spec, context = self._spec, self.context
        topics = list(spec.topics)
        for key, (offset, watermark) in inbox.take_chunk():
            if not (type(key) is BroadcastKey and type(key.key) is tuple and key.key[:1] == (OFFSET_TAG,)):
                raise ValueError(f"vertex {context.vertex_name!r}: the Kafka source cannot restore the snapshot"
                                 f" entry {key!r}; was the snapshot taken of another job?")
            _, topic, partition = key.key
            if topic in topics and owner_of(topics.index(topic), len(topics), partition,
                                            context.total_parallelism) == context.global_index:
                self._offsets[(topic, partition)] = offset
                if watermark is not None:
                    self._restored_wms[(topic, partition)] = watermark
        self._restored = True

    def finish_snapshot_restore(self) -> bool:
        self._restored = True
        return True

    def close(self) -> None:
        if self._poller is not None:
            self._poller.close()
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            try:
                consumer.close()
            except Exception as error:  # noqa: BLE001 - closing must not hide the job's own error
                logging.getLogger("jet.connectors.kafka").warning("closing the Kafka consumer failed: %s", error)

