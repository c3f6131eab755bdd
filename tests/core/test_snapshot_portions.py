"""Processors with many keys save them over several ``save_to_snapshot`` calls through the
bounded ``offer_to_snapshot``, and what they saved restores the state plain Python computes."""

from collections import Counter

import pytest

from jet.core.aggregate import counting, summing
from jet.core.outbox import MIN_SNAPSHOT_PORTION, Outbox
from jet.core.processors import transform_stateful_p
from jet.core.processors.aggregation import AccumulateByKeyP
from jet.core.processors.session_window import aggregate_to_session_window_p
from jet.core.processors.windows import aggregate_to_sliding_window_p
from jet.core.sliding_window_policy import sliding_win_policy

from tests.core.snapshot_driver import Driven, context_of, restore_all

KEYS = 3000
FRAME = 10


def _events() -> list[tuple[int, int]]:
    """(timestamp, key) pairs: every key in one to three frames of 10 ms."""
    return [(ts, key) for key in range(KEYS) for ts in range(1, 1 + FRAME * (1 + key % 3), FRAME)]


def _key(item):
    return item


def _small_portions(driven: Driven) -> Driven:
    driven.outbox.snapshot_capacity = MIN_SNAPSHOT_PORTION
    return driven


def test_offer_to_snapshot_refuses_once_a_portion_is_offered():
    outbox = Outbox(1, 10, snapshot_capacity=MIN_SNAPSHOT_PORTION)
    assert all(outbox.offer_to_snapshot(i, i) for i in range(MIN_SNAPSHOT_PORTION))
    assert outbox.offer_to_snapshot("one more", 0) is False
    assert len(outbox.snapshot_entries) == MIN_SNAPSHOT_PORTION


@pytest.mark.parametrize("restored_count", [1, 2, 3])
def test_a_sliding_window_saved_in_portions_restores_the_counts_of_plain_python(restored_count):
    supplier = aggregate_to_sliding_window_p(_key, sliding_win_policy(3 * FRAME, FRAME), counting())
    saved = []
    for index in range(2):  # two processors, each with its share of the keys
        driven = _small_portions(Driven(supplier, context_of(index, 2)))
        driven.process([(ts, key) for ts, key in _events() if key % 2 == index])
        saved.append(driven.save())
        assert driven.save_calls > KEYS // 2 // MIN_SNAPSHOT_PORTION  # in portions, not at once
    restored = restore_all(supplier, saved, restored_count)
    frames = Counter()
    for driven in restored:
        for frame, accumulators in driven.processor.frames.items():
            for key, count in accumulators.items():
                frames[(frame, key)] += count
    expected = Counter((ts - ts % FRAME + FRAME, key) for ts, key in _events())
    assert frames == expected


def test_a_session_window_saved_in_portions_restores_every_session():
    supplier = aggregate_to_session_window_p(5, _key, counting())
    driven = _small_portions(Driven(supplier, context_of(0, 1)))
    driven.process(_events())
    saved = driven.save()
    assert driven.save_calls > 1
    (restored,) = restore_all(supplier, [saved], 1)
    sessions = {key: list(zip(w.starts, w.ends, w.accs)) for key, w in restored.processor.windows.items()}
    expected = {key: [(ts, ts + 5, 1) for ts in range(1, 1 + FRAME * (1 + key % 3), FRAME)] for key in range(KEYS)}
    assert sessions == expected


def _running_sum(state, key, item):
    state[0] += item
    return state[0]


def test_a_stateful_mapping_saved_in_portions_restores_every_state():
    supplier = transform_stateful_p("map", lambda item: item % 1000, 0, lambda: [0], _running_sum)
    driven = _small_portions(Driven(supplier, context_of(0, 1)))
    items = list(range(10_000))
    driven.process([(0, item) for item in items])
    saved = driven.save()
    assert driven.save_calls > 1000 // MIN_SNAPSHOT_PORTION
    (restored,) = restore_all(supplier, [saved], 1)
    expected = Counter()
    for item in items:
        expected[item % 1000] += item
    assert {key: state[0] for key, (_, state) in restored.processor.states.items()} == dict(expected)


def test_a_keyed_aggregation_saved_in_portions_restores_every_accumulator():
    def supplier():
        return AccumulateByKeyP(lambda item: item % 777, summing())

    driven = _small_portions(Driven(supplier, context_of(0, 1)))
    driven.process(list(range(5000)))
    saved = driven.save()
    assert driven.save_calls > 777 // MIN_SNAPSHOT_PORTION
    (restored,) = restore_all(supplier, [saved], 1)
    expected = Counter()
    for item in range(5000):
        expected[item % 777] += item
    assert {key: restored.processor._aggregate.finish(acc)
            for key, acc in restored.processor._accumulators.items()} == dict(expected)
