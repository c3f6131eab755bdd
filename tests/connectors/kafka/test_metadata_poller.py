"""The metadata poller's schedule and failure rule, with a clock the test moves and fetches the
test scripts (no broker: what is checked is when the poller asks and when it gives up)."""

from __future__ import annotations

import time

import pytest

from jet.connectors.kafka.metadata import KafkaUnavailableError, PartitionCountPoller


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def settle(poller: PartitionCountPoller):
    """Poll until the fetch in flight has finished; its result (or None)."""
    deadline = time.monotonic() + 5
    while poller._future is not None and not poller._future.done():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return poller.poll()


def test_it_fetches_at_once_then_every_interval_and_fails_only_after_the_give_up_time():
    answers = [{"t": 2}, KafkaUnavailableError("brokers X did not answer"), KafkaUnavailableError("again"),
               KafkaUnavailableError("still")]
    calls = []

    def fetch():
        calls.append(clock.now)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    clock = Clock()
    poller = PartitionCountPoller(fetch, interval_ms=5_000, give_up_s=30, clock=clock)
    try:
        assert poller.poll() is None  # the first fetch starts
        assert settle(poller) == {"t": 2}
        clock.now += 4.9
        assert poller.poll() is None and calls == [100.0], "not before the interval"
        clock.now += 0.1
        poller.poll()
        assert settle(poller) is None, "a failure after a success is retried"
        clock.now += 5
        poller.poll()
        assert settle(poller) is None
        clock.now += 25
        poller.poll()
        with pytest.raises(KafkaUnavailableError, match="still"):
            settle(poller)
    finally:
        poller.close()


def test_a_first_fetch_that_fails_fails_at_once():
    def fetch():
        raise KafkaUnavailableError("brokers X did not answer")

    poller = PartitionCountPoller(fetch, interval_ms=5_000, give_up_s=30, clock=Clock())
    try:
        poller.poll()
        with pytest.raises(KafkaUnavailableError):
            settle(poller)
    finally:
        poller.close()
