"""Topic metadata fetched off the cooperative thread: how many partitions each topic has now.

A source asks every few seconds (new partitions are read from their beginning, as in Jet). The
fetch blocks up to its timeout, so it runs on a thread of its own and the source only looks at
whether the answer is there.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from jet.connectors.kafka.client_config import METADATA_TIMEOUT_S

log = logging.getLogger("jet.connectors.kafka.metadata")


class KafkaUnavailableError(ConnectionError):
    """The brokers did not answer within the timeout."""


class KafkaTopicMissingError(LookupError):
    """A topic the job names does not exist on the brokers."""


def fetch_partition_counts(admin: Any, topics: list[str], servers: str,
                           timeout_s: float = METADATA_TIMEOUT_S) -> dict[str, int]:
    """``{topic: partition count}`` for ``topics``; missing topics are left out.

    Lists every topic (not the named ones: asking for a named topic makes brokers with automatic
    topic creation create it)."""
    from confluent_kafka import KafkaException
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as error:
        raise KafkaUnavailableError(f"Kafka brokers {servers} did not answer a metadata request within"
                                    f" {timeout_s:g} s: {error.args[0] if error.args else error}") from None
    return {topic: len(metadata.topics[topic].partitions) for topic in topics
            if topic in metadata.topics and metadata.topics[topic].error is None}


def require_topics(counts: dict[str, int], topics: list[str], servers: str, where: str) -> None:
    """A clear error when a topic is missing (or has no partitions)."""
    missing = [topic for topic in topics if not counts.get(topic)]
    if missing:
        raise KafkaTopicMissingError(f"{where}: topic(s) {', '.join(map(repr, missing))} do not exist on the"
                                     f" Kafka brokers {servers}; create them first")


class PartitionCountPoller:
    """Fetches partition counts every ``interval_ms`` on a worker thread; :meth:`poll` never blocks.

    The first fetch must succeed (unreachable brokers or a missing topic fail the source then);
    later failures are logged and retried, and fail the source only once the brokers have been
    unreachable for ``give_up_s``."""

    def __init__(self, fetch: Callable[[], dict[str, int]], interval_ms: int, give_up_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._interval_s = interval_ms / 1000
        self._give_up_s = give_up_s
        self._clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-metadata")
        self._future: Future | None = None
        self._next_at = 0.0
        self._last_success: float | None = None

    def poll(self) -> dict[str, int] | None:
        """New counts when a fetch finished since the last call, else None (and maybe start one)."""
        future = self._future
        now = self._clock()
        if future is None:
            if now >= self._next_at:
                self._future = self._executor.submit(self._fetch)
            return None
        if not future.done():
            return None
        self._future = None
        self._next_at = now + self._interval_s
        try:
            counts = future.result()
        except KafkaUnavailableError as error:
            if self._last_success is None or now - self._last_success >= self._give_up_s:
                raise
            log.warning("%s; retrying in %g s", error, self._interval_s)
            return None
        self._last_success = now
        return counts

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
