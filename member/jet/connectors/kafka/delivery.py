"""Producing records and noticing the ones Kafka did not take: shared by both kinds of sink."""

from __future__ import annotations

import time
from typing import Any

from jet.connectors.kafka.client_config import BROKER_OUTAGE_S, FLUSH_TIMEOUT_S


class KafkaDeliveryError(RuntimeError):
    """Kafka refused or lost a record the sink wrote, or did not acknowledge it in time."""


class DeliveryWatch:
    """The delivery callback of a sink's producers: keeps the first failure, raised by :meth:`check`."""

    def __init__(self, topic: str, servers: str) -> None:
        self.topic = topic
        self.servers = servers
        self.error: KafkaDeliveryError | None = None

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and self.error is None:
            self.error = KafkaDeliveryError(f"Kafka sink: writing to topic {self.topic!r} at {self.servers} failed:"
                                            f" {error.str()}")

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def produce(self, producer: Any, key: bytes | None, value: bytes | None) -> None:
        """``producer.produce`` to the watched topic, waiting while its local queue is full."""
        from confluent_kafka import KafkaException
        deadline = None
        while True:
            try:
                producer.produce(self.topic, value, key, on_delivery=self.on_delivery)
                return
            except BufferError:  # the local queue is full: wait for acknowledgements, not forever
                deadline = deadline or time.monotonic() + BROKER_OUTAGE_S
                if time.monotonic() > deadline:
                    raise KafkaDeliveryError(f"Kafka sink: the producer's queue to topic {self.topic!r} at"
                                             f" {self.servers} stayed full for {BROKER_OUTAGE_S:g} s (are the"
                                             f" brokers reachable?)") from None
                producer.poll(0.1)
            except KafkaException as error:  # refused at once (too large, unknown partition, ...)
                raise KafkaDeliveryError(f"Kafka sink: writing a record of {len(value or b'')} bytes to topic"
                                         f" {self.topic!r} at {self.servers} failed: {error.args[0].str()}") from None

    def flush(self, producer: Any, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        """Wait until every record of ``producer`` is acknowledged; fail if one was not."""
        remaining = producer.flush(timeout_s)
        self.check()
        if remaining:
            raise KafkaDeliveryError(f"Kafka sink: {remaining} records to topic {self.topic!r} at {self.servers}"
                                     f" were not acknowledged within {timeout_s:g} s")
