"""The descriptors ``Sources.kafka`` and ``Sinks.kafka`` return, and their submission checks.

A check runs when the job is submitted: the brokers must answer a metadata request within
``METADATA_TIMEOUT_S`` and every named topic must exist, so a typo fails the job before
anything runs, naming the servers and the topic (never the credentials).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from jet.pipeline.source_sink import Sink, StreamSource
from jet.connectors.kafka.client_config import (DEFAULT_METADATA_POLL_MS, check_client_config, check_servers,
                                                client_settings, for_admin)
from jet.connectors.kafka.records import KafkaRecord
from jet.core.event_time import EventTimePolicy
from jet.core.processor import Processor


def _require_client() -> None:
    """Fail at the factory call, with the install command, when confluent-kafka is missing."""
    from importlib.util import find_spec
    if find_spec("confluent_kafka") is None:
        raise ImportError("the Kafka connectors need confluent-kafka: pip install 'jet-on-k8s[kafka]'")


def check_topics_exist(bootstrap_servers: str, topics: list[str], client_config: dict, where: str) -> None:
    """Fail clearly unless the brokers answer and every topic exists."""
    from confluent_kafka.admin import AdminClient

    from jet.connectors.kafka.metadata import fetch_partition_counts, require_topics
    admin = AdminClient(client_settings(bootstrap_servers, for_admin(client_config)))
    counts = fetch_partition_counts(admin, topics, bootstrap_servers)
    require_topics(counts, topics, bootstrap_servers, where)


def kafka_source(topics: str | Iterable[str], bootstrap_servers: str, group_id: str | None = None, *,
                 value_fn: Callable[[bytes | None], Any] | None = None,
                 record_fn: Callable[[KafkaRecord], Any] | None = None,
                 metadata_poll_ms: int = DEFAULT_METADATA_POLL_MS, name: str | None = None,
                 **client_config: Any) -> StreamSource:
    """See ``Sources.kafka``."""
    from jet.connectors.kafka.source import KafkaSourceSpec, StreamKafkaP
    where = "Sources.kafka"
    topic_list = [topics] if isinstance(topics, str) else list(topics)
    if not topic_list or not all(isinstance(t, str) and t for t in topic_list) or len(set(topic_list)) < len(topic_list):
        raise ValueError(f"{where}: topics must be a topic name or a list of distinct names, got {topics!r}")
    check_servers(bootstrap_servers, where)
    if group_id is not None and (not isinstance(group_id, str) or not group_id):
        raise ValueError(f"{where}: group_id must be a non-empty str or None, got {group_id!r}")
    for fn_name, fn in (("value_fn", value_fn), ("record_fn", record_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{where}: {fn_name} must be callable, got {fn!r}")
    if value_fn is not None and record_fn is not None:
        raise ValueError(f"{where}: give value_fn or record_fn, not both")
    if not isinstance(metadata_poll_ms, int) or isinstance(metadata_poll_ms, bool) or metadata_poll_ms < 100:
        raise ValueError(f"{where}: metadata_poll_ms must be an int >= 100, got {metadata_poll_ms!r}")
    _require_client()
    spec = KafkaSourceSpec(tuple(topic_list), bootstrap_servers, group_id, value_fn, record_fn,
                           check_client_config(client_config, where), metadata_poll_ms)

    def policy_supplier(policy: EventTimePolicy | None) -> Callable[[], Processor]:
        return lambda: StreamKafkaP(spec, policy)

    return StreamSource(name or f"kafka({','.join(topic_list)})", policy_supplier(None), 1,
                        lambda: check_topics_exist(bootstrap_servers, topic_list, spec.client_config, where),
                        policy_supplier=policy_supplier, native_timestamps=True)


def kafka_sink(topic: str, bootstrap_servers: str, key_fn: Callable[[Any], Any] | None = None,
               value_fn: Callable[[Any], Any] | None = None, exactly_once: bool | None = None, *,
               name: str | None = None, **client_config: Any) -> Sink:
    """See ``Sinks.kafka``."""
    from jet.connectors.kafka.sink import KafkaSinkSpec, WriteKafkaP
    where = "Sinks.kafka"
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"{where}: topic must be a non-empty str, got {topic!r}")
    check_servers(bootstrap_servers, where)
    for fn_name, fn in (("key_fn", key_fn), ("value_fn", value_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{where}: {fn_name} must be callable, got {fn!r}")
    if exactly_once not in (None, True, False):
        raise ValueError(f"{where}: exactly_once must be None (follow the job), True or False, got {exactly_once!r}")
    _require_client()
    spec = KafkaSinkSpec(topic, bootstrap_servers, key_fn, value_fn, exactly_once,
                         check_client_config(client_config, where))
    return Sink(name or f"kafka({topic})", lambda: WriteKafkaP(spec), 1,
                lambda: check_topics_exist(bootstrap_servers, [topic], spec.client_config, where))
