"""Client settings shared by the Kafka source and sink: defaults, timeouts, and what may be logged.

Every blocking call the connectors make to Kafka is bounded by one of the timeouts here; a user
may override client settings (``**client_config`` of the factories), never these bounds.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

METADATA_TIMEOUT_S = 10.0
"""Longest wait for topic metadata; also how long the brokers may stay unreachable."""
FLUSH_TIMEOUT_S = 30.0
"""Longest wait for the producer to have every record acknowledged (phase 1, completion)."""
TRANSACTION_TIMEOUT_S = 30.0
"""Longest wait for ``init_transactions``, ``commit_transaction`` and ``abort_transaction``."""
BROKER_OUTAGE_S = 3 * METADATA_TIMEOUT_S
"""How long the brokers may stay unreachable while a job runs: the source and the sink retry
(reconnect, write a transaction again) within it, and fail the job naming the servers after it."""
DEFAULT_METADATA_POLL_MS = 5_000
"""How often a source looks for new partitions (Jet's ``METADATA_CHECK_INTERVAL_NANOS``: 5 s)."""

_SECRET_WORDS = ("password", "secret", "token", "sasl.jaas", "ssl.key", "oauthbearer", "credential")

librdkafka_log = logging.getLogger("jet.connectors.kafka.librdkafka")
"""Where librdkafka's own log lines go (instead of the process's stderr)."""


def client_settings(bootstrap_servers: str, user_config: Mapping[str, Any], **defaults: Any) -> dict[str, Any]:
    """A confluent-kafka configuration: ``defaults``, then the user's settings, then the servers."""
    config = dict(defaults)
    config.update(user_config)
    config["bootstrap.servers"] = bootstrap_servers
    config.setdefault("logger", librdkafka_log)
    return config


def redacted(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` fit for a log line or an error message: secrets replaced by ``***``."""
    return {key: ("***" if any(word in key.lower() for word in _SECRET_WORDS) else value)
            for key, value in config.items() if key != "logger"}


def check_servers(bootstrap_servers: Any, where: str) -> str:
    """``bootstrap_servers`` as given, or a clear error when it is not a non-empty str."""
    if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
        raise ValueError(f"{where}: bootstrap_servers must be a non-empty str such as"
                         f" 'host1:9092,host2:9092', got {bootstrap_servers!r}")
    return bootstrap_servers


def check_client_config(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The user's client settings, with Python-style names (``auto_offset_reset``) accepted."""
    settings = {}
    for key, value in config.items():
        name = key.replace("_", ".")
        if name == "bootstrap.servers":
            raise ValueError(f"{where}: give the servers as bootstrap_servers, not in the client settings")
        settings[name] = value
    return settings


_CONSUMER_ONLY = ("group.", "auto.", "enable.auto", "enable.partition", "isolation.", "fetch.", "max.poll",
                  "session.", "heartbeat.", "partition.assignment", "queued.", "check.crcs", "allow.auto")
_PRODUCER_ONLY = ("acks", "linger.", "batch.", "compression.", "enable.idempotence", "transaction",
                  "queue.buffering", "message.send", "message.timeout", "retries", "delivery.", "request.required",
                  "partitioner")


def for_consumer(user_config: Mapping[str, Any]) -> dict[str, Any]:
    """The user's settings without the producer-only ones (for the sink's marker reads)."""
    return {key: value for key, value in user_config.items() if not key.startswith(_PRODUCER_ONLY)}


def for_admin(user_config: Mapping[str, Any]) -> dict[str, Any]:
    """The user's settings an AdminClient understands too (connection and security ones)."""
    return {key: value for key, value in user_config.items()
            if not key.startswith(_PRODUCER_ONLY) and not key.startswith(_CONSUMER_ONLY)}
