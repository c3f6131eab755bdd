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

**A broker that goes away and comes back** (a restart aborts the transactions that were open,
and a client call to a broker that is not there may not return at all, whatever its timeout):
every transaction call runs on a thread of its own and is given up after ``CALL_BOUND_S``. A
transaction that fails (a call given up, a record not acknowledged) is written again from its
saved records by a new producer of the same id, whose
``init_transactions`` fences the old one and aborts what it left open; a commit that fails goes
the restore's way (read the marker, write again only if it does not show the commit). These
retries go on for ``BROKER_OUTAGE_S``; then the sink fails the job with a
:class:`KafkaTransactionError` naming the servers and the transaction.

**A commit the broker acknowledged and then lost.** A broker that stops may answer a commit and
not keep it, or, back again, answer a commit retried across the restart for a transaction its
restart aborted (noida-db 0.2.3 does both; Kafka keeps what it acknowledged). So the records of
each commit are kept until the next prepare; if the sink's clients reported an error since the
commit began (a broker went away) or a call failed, that prepare reads the commit's marker and,
where it does not show the commit, writes its records again in the transaction being prepared,
before the next snapshot can leave them behind.

The cost: the records of one snapshot interval are kept in memory and in the snapshot. The
output of windowed aggregations is small; for a sink of millions of records per interval keep
the snapshot interval short or use at-least-once. Records re-written after a restore get new
offsets and timestamps.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple

from jet.connectors.kafka.client_config import BROKER_OUTAGE_S, TRANSACTION_TIMEOUT_S
from jet.connectors.kafka.delivery import DeliveryWatch, KafkaDeliveryError

log = logging.getLogger("jet.connectors.kafka.transactions")
_MAX_PARALLEL_ABORTS = 8
MARKER_RECHECK_PAUSES_S = (0.2, 0.5, 1.0)
"""Pauses between reads of a transaction's marker before it is taken as not committed."""
CALL_BOUND_S = 15.0
"""Longest wait for one transaction call (its own timeout is ``TRANSACTION_TIMEOUT_S``, which a
call to a broker that restarted does not always keep); a call given up is retried as a whole."""
RETRY_PAUSE_S = 1.0
"""Pause between two attempts at a failed transaction step."""


class KafkaTransactionError(RuntimeError):
    """A transaction of the sink failed, or a call for it did not return, for ``BROKER_OUTAGE_S``."""


class ClientTroubles:
    """The ``error_cb`` of the sink's producers: counts the errors they report (a broker that
    went away: ``_TRANSPORT``, ``_ALL_BROKERS_DOWN``, ...); a failed call is counted by calling
    it without an error."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, error: Any = None) -> None:
        self.count += 1


class PreparedKafkaTransaction(NamedTuple):
    """What phase 1 saves in the snapshot for one transaction."""

    number: int
    records: list  # (key bytes | None, value bytes | None)


def bounded_call(what: str, call: Callable[[], Any], timeout_s: float) -> Any:
    """``call()`` on a daemon thread; its result, its exception, or a :class:`TimeoutError` when it
    has not returned within ``timeout_s`` (the thread is left behind with its abandoned client)."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            outcome.append((False, error))

    thread = threading.Thread(target=run, name=f"kafka-{what}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise TimeoutError(f"{what} did not return within {timeout_s:g} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


class KafkaTransactions:
    """The Kafka side of a transactional sink processor (see the module docstring)."""

    def __init__(self, delivery: DeliveryWatch, producer_config: dict, consumer_config: dict,
                 outage_s: float = BROKER_OUTAGE_S) -> None:
        self._delivery = delivery
        self._topic = delivery.topic
        self._servers = delivery.servers
        self._producer_config = producer_config
        self._consumer_config = consumer_config
        self._outage_s = outage_s
        self._producers: dict[str, Any] = {}  # id -> producer ready for begin_transaction
        self._open: dict[str, Any] = {}  # id -> producer inside a transaction
        self._records: dict[str, list] = {}  # id -> records of its open transaction
        self._numbers: dict[str, int] = {}
        self._broken: set[str] = set()  # open transactions a write failed in: written again at prepare
        self._last_number = 0
        # no reference back to self: a producer in a cycle would be destroyed by whichever thread collects it
        self._troubles = ClientTroubles()
        self._unconfirmed: dict[str, tuple[PreparedKafkaTransaction, int]] = {}
        """id -> its last commit and the trouble count when that began, until the next prepare."""

    # -- writing --------------------------------------------------------------------------------
    def produce(self, txn_id: str, key: bytes | None, value: bytes | None) -> None:
        """Write one record into the open transaction ``txn_id``."""
        self._records[txn_id].append((key, value))
        if txn_id in self._broken:
            return
        try:
            self._delivery.produce(self._open[txn_id], key, value)
        except KafkaDeliveryError as error:  # written again by prepare, within the bound
            log.warning("%s; transaction %s will be written again", error, txn_id)
            self._broken.add(txn_id)

    # -- TransactionalResource ------------------------------------------------------------------
    def begin(self, txn_id: str) -> None:
        ready = [self._producers.pop(txn_id, None)]

        def attempt() -> Any:  # the ready producer first; after a failure, a new one
            producer = ready.pop() if ready and ready[0] is not None else self._initialized_producer(txn_id)
            ready.clear()
            self._call("begin_transaction", producer.begin_transaction)
            return producer
        self._open[txn_id] = self._retried("begin", txn_id, attempt)
        self._records[txn_id] = []
        self._numbers[txn_id] = self._next_number()

    def prepare(self, txn_id: str) -> PreparedKafkaTransaction:
        number, records = self._numbers[txn_id], self._records[txn_id]
        producer = self._open[txn_id]
        try:
            if txn_id in self._broken:
                raise KafkaDeliveryError(f"a write into transaction {txn_id} failed")
            for key, value in self._take_back_lost_commits(txn_id, producer):
                self._delivery.produce(producer, key, value)
            self._flush_and_mark(producer, txn_id, number, self._delivery)
        except Exception as error:  # noqa: BLE001 - any failure: the same records, a new producer
            self._troubles()
            log.warning("Kafka sink: preparing transaction %s at %s failed (%s); writing its %d records again",
                        txn_id, self._servers, error, len(records))
            self._delivery.error = None  # the failure is this transaction's, written again here
            self._open[txn_id] = self._retried("prepare", txn_id, lambda: self._write_again(txn_id, number))
        self._broken.discard(txn_id)
        return PreparedKafkaTransaction(number, self._records.pop(txn_id))

    def commit(self, txn_id: str, prepared: PreparedKafkaTransaction) -> None:
        troubles_before = self._troubles.count
        producer = self._open.pop(txn_id, None)
        committed = False
        if producer is not None:  # prepared by this very producer: phase 2 as Kafka means it
            try:
                self._call("commit_transaction", lambda: producer.commit_transaction(TRANSACTION_TIMEOUT_S))
                self._producers[txn_id] = producer
                committed = True
            except Exception as error:  # noqa: BLE001 - settled below as after a restart
                self._troubles()
                log.warning("Kafka sink: committing transaction %s at %s failed (%s); settling it with a new"
                            " producer", txn_id, self._servers, error)
        if not committed:
            self._producers[txn_id] = self._retried("commit", txn_id, lambda: self._settle(txn_id, prepared))
        self._unconfirmed[txn_id] = (prepared, troubles_before)

    def abort(self, txn_ids: list[str]) -> None:
        fresh = []
        for txn_id in txn_ids:
            producer = self._open.pop(txn_id, None)
            self._records.pop(txn_id, None)
            self._broken.discard(txn_id)
            if producer is not None:
                try:
                    self._call("abort_transaction", lambda: producer.abort_transaction(TRANSACTION_TIMEOUT_S))
                    self._producers[txn_id] = producer
                    continue
                except Exception as error:  # noqa: BLE001 - a new producer's init aborts it
                    log.warning("Kafka sink: aborting transaction %s failed (%s); fencing it", txn_id, error)
            if txn_id not in self._producers:
                fresh.append(txn_id)
        if not fresh:
            return
        # init_transactions fences and aborts what an earlier producer of the id left open; it
        # takes a round trip or more per id, so the ids are settled in parallel.
        with ThreadPoolExecutor(min(_MAX_PARALLEL_ABORTS, len(fresh)), thread_name_prefix="kafka-abort") as pool:
            list(pool.map(lambda txn_id: self._retried("abort", txn_id, lambda: self._initialized_producer(txn_id)),
                          fresh))  # dropped: a begin makes its own

    def close(self) -> None:
        for producer in list(self._producers.values()) + list(self._open.values()):
            producer.flush(0)
        self._producers.clear()
        self._open.clear()

    # -- steps ----------------------------------------------------------------------------------
    def _flush_and_mark(self, producer: Any, txn_id: str, number: int, delivery: DeliveryWatch) -> None:
        self._call("flush", lambda: delivery.flush(producer, TRANSACTION_TIMEOUT_S))
        self._send_marker(producer, txn_id, number)

    def _produce_all(self, producer: Any, records: list) -> DeliveryWatch:
        """``records`` into ``producer``'s open transaction, watched apart from earlier producers'."""
        delivery = DeliveryWatch(self._topic, self._servers)
        for key, value in records:
            delivery.produce(producer, key, value)
        return delivery

    def _write_again(self, txn_id: str, number: int) -> Any:
        """A new producer of ``txn_id`` (fencing the old one) writes the transaction's records
        (with those of commits the broker lost) and the marker ``number`` in a new transaction,
        left open (prepared); returns the producer."""
        producer = self._initialized_producer(txn_id)
        self._take_back_lost_commits(txn_id)
        self._call("begin_transaction", producer.begin_transaction)
        self._flush_and_mark(producer, txn_id, number, self._produce_all(producer, self._records[txn_id]))
        return producer

    def _take_back_lost_commits(self, txn_id: str, current: Any = None) -> list:
        """The records of the commits since the last prepare that the broker lost, added to the
        records of ``txn_id`` (still open) and returned; a commit is checked by its marker only
        when the clients had trouble since it began. ``current``: the producer of ``txn_id``."""
        # The error reports of a commit's producer (ready, or writing ``txn_id`` now) reach the
        # count when it is polled; an abandoned producer is not: a failure counts already.
        for producer in list(self._producers.values()) + ([] if current is None else [current]):
            producer.poll(0)
        lost = []
        for other_id, (prepared, troubles_before) in list(self._unconfirmed.items()):
            if self._troubles.count > troubles_before and not self._marker_shows(other_id, prepared.number):
                log.warning("Kafka sink: the broker at %s lost the commit of transaction %s (%d records) when it"
                            " went away; writing them again in transaction %s", self._servers, other_id,
                            len(prepared.records), txn_id)
                self._records[txn_id][:0] = prepared.records  # kept even if a later step fails
                lost.extend(prepared.records)
            del self._unconfirmed[other_id]
        return lost

    def _settle(self, txn_id: str, prepared: PreparedKafkaTransaction) -> Any:
        """Commit ``prepared`` with a new producer of ``txn_id``: nothing to do if its marker shows
        it committed, else its records written again and committed. Returns the producer."""
        producer = self._initialized_producer(txn_id)  # settles what an earlier producer left
        if not self._marker_shows(txn_id, prepared.number):
            log.info("Kafka sink: transaction %s (%d records) was not committed; writing its records again",
                     txn_id, len(prepared.records))
            self._call("begin_transaction", producer.begin_transaction)
            self._flush_and_mark(producer, txn_id, prepared.number, self._produce_all(producer, prepared.records))
            self._call("commit_transaction", lambda: producer.commit_transaction(TRANSACTION_TIMEOUT_S))
        return producer

    def _retried(self, step: str, txn_id: str, attempt: Callable[[], Any]) -> Any:
        """``attempt()`` again after each failure until it succeeds, for at most the outage bound."""
        deadline = time.monotonic() + self._outage_s
        while True:
            try:
                return attempt()
            except Exception as error:  # noqa: BLE001 - every failure is retried within the bound
                self._troubles()
                if time.monotonic() + RETRY_PAUSE_S > deadline:
                    raise KafkaTransactionError(
                        f"Kafka sink: {step} of transaction {txn_id} on topic {self._topic!r} at {self._servers}"
                        f" still failed after {self._outage_s:g} s of retries: {type(error).__name__}: {error}"
                    ) from None
                log.warning("Kafka sink: %s of transaction %s at %s failed (%s: %s); retrying", step, txn_id,
                            self._servers, type(error).__name__, error)
                time.sleep(RETRY_PAUSE_S)

    @staticmethod
    def _call(what: str, call: Callable[[], Any]) -> Any:
        return bounded_call(what, call, CALL_BOUND_S)

    # -- helpers --------------------------------------------------------------------------------
    def _initialized_producer(self, txn_id: str) -> Any:
        from confluent_kafka import Producer
        producer = Producer({**self._producer_config, "transactional.id": txn_id, "error_cb": self._troubles})
        self._call("init_transactions", lambda: producer.init_transactions(TRANSACTION_TIMEOUT_S))
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

        def send() -> None:  # the marker consumer's close is bounded too
            consumer = self._marker_consumer(txn_id)
            try:
                producer.send_offsets_to_transaction([TopicPartition(self._topic, 0, number)],
                                                     consumer.consumer_group_metadata(), TRANSACTION_TIMEOUT_S)
            finally:
                consumer.close()
        self._call("send_offsets_to_transaction", send)

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

        def read() -> Any:
            consumer = self._marker_consumer(txn_id)
            try:
                [committed] = consumer.committed([TopicPartition(self._topic, 0)], timeout=TRANSACTION_TIMEOUT_S)
            finally:
                consumer.close()
            return committed
        committed = self._call("committed", read)
        return committed.offset if committed.offset >= 0 else None
