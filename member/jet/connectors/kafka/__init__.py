"""Kafka source and sink on ``confluent-kafka`` (Jet's ``KafkaSources`` / ``KafkaSinks``).

- :mod:`.client_config` — the client settings both build on: defaults, timeouts, what may be logged;
- :mod:`.records` — ``KafkaRecord`` and the default serializer;
- :mod:`.ownership` — which source processor reads which topic partition;
- :mod:`.metadata` — topic metadata fetched off the cooperative thread;
- :mod:`.source` — ``StreamKafkaP``, the cooperative source processor;
- :mod:`.delivery` — producing records and noticing the ones Kafka did not take;
- :mod:`.transactions` — Kafka transactions as a :class:`~jet.connectors.transaction_pool.TransactionalResource`;
- :mod:`.sink` — ``WriteKafkaP``, the sink processor (idempotent or transactional);
- :mod:`.factories` — the ``Sources.kafka`` / ``Sinks.kafka`` descriptors and their submission checks.

``confluent_kafka`` is imported only by the modules that talk to Kafka, so ``import jet`` works
without it; a job using these connectors needs ``pip install 'jet-on-k8s[kafka]'``.
"""
