"""Kafka -> 1 s tumbling window count -> PostgreSQL, exactly-once, with the pipeline of the
example JetJob (examples/jetjob-kafka-to-postgres.yaml) run on real member processes, a member
SIGKILLed twice; the table is compared with a plain-Python oracle over the input records."""

from __future__ import annotations

import os
from collections import Counter

import yaml

import jet
from tests.cluster.cluster_support import wait_until
from tests.conftest import REPO_ROOT
from tests.connectors.kafka.kafka_support import create_topic, produce
from tests.connectors.kafka.test_kafka_cluster import EXACTLY_ONCE, WAIT_S, produce_slowly
from tests.connectors.postgres.conftest import pg_dsn, pg_server  # noqa: F401 - the PostgreSQL fixtures

EXAMPLE = REPO_ROOT / "examples" / "jetjob-kafka-to-postgres.yaml"


def example_pipeline(servers: str, dsn: str):
    """The pipeline the example JetJob runs, with its environment set as the pod's would be."""
    code = yaml.safe_load(EXAMPLE.read_text())["spec"]["pipeline"]["code"]
    namespace: dict = {}
    exec(compile(code, str(EXAMPLE), "exec"), namespace)  # noqa: S102 - the example's own code
    previous = {name: os.environ.get(name) for name in ("KAFKA_SERVERS", "JET_POSTGRES_DSN")}
    os.environ.update(KAFKA_SERVERS=servers, JET_POSTGRES_DSN=dsn)
    try:
        return namespace["pipeline"]()
    finally:
        for name, value in previous.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)


def table_rows(dsn: str) -> dict:
    import psycopg
    with psycopg.connect(dsn) as connection:
        return {(start, word): count for start, word, count in
                connection.execute("SELECT window_start, word, count FROM word_counts").fetchall()}


def test_the_example_counts_from_kafka_into_postgres_exactly_once_across_member_kills(kafka_broker, pg_dsn,
                                                                                     tmp_path):
    import psycopg
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("CREATE TABLE word_counts (window_start bigint, word text, count bigint, "
                           "PRIMARY KEY (window_start, word))")
    servers, topic = kafka_broker.bootstrap_servers, "lines"  # the example's topic
    create_topic(servers, topic, 4)
    base, count = 1_700_000_000_000, 3000
    lines = [f"alpha {'beta' if i % 3 else 'gamma'}" for i in range(count)]
    timestamps = [base + i * 5 for i in range(count)]  # 15 s of event time
    oracle = Counter()
    for ts, line in zip(timestamps, lines):
        for word in line.split():
            oracle[(ts - ts % 1000, word)] += 1
    with jet.local_cluster(members=2, log_dir=tmp_path / "logs", restart_delay_ms=100) as cluster:
        job = cluster.new_job(example_pipeline(servers, pg_dsn), EXACTLY_ONCE)
        third = count // 3
        produce_slowly(servers, topic, 4, lines[:third], timestamps=timestamps[:third])
        wait_until(lambda: table_rows(pg_dsn), WAIT_S, "first windows in the table")
        cluster.kill_member(1)
        wait_until(lambda: job.info()["restarts"] >= 1, WAIT_S, "the first restart")
        produce_slowly(servers, topic, 4, lines[third:2 * third], timestamps=timestamps[third:2 * third])
        cluster.kill_member(1)
        wait_until(lambda: job.info()["restarts"] >= 2, WAIT_S, "the second restart")
        produce_slowly(servers, topic, 4, lines[2 * third:], timestamps=timestamps[2 * third:])
        produce(servers, topic, [(partition, None, b"closing") for partition in range(4)],
                [base + count * 5 + 5_000] * 4)  # closes every window of the oracle
        wait_until(lambda: len({k for k in table_rows(pg_dsn) if k[1] != "closing"}) >= len(oracle), WAIT_S,
                   "every window in the table")
        job.cancel()
    rows = {key: total for key, total in table_rows(pg_dsn).items() if key[1] != "closing"}
    assert rows == dict(oracle)
