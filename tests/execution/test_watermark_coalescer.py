"""WatermarkCoalescer: Jet's coalescing rules as scenarios with plain expected values."""

import pytest

from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark
from jet.execution.watermark_coalescer import (NO_NEW_WM, WatermarkOrderError,
                                               create_coalescer)

IDLE = IDLE_MESSAGE
DONE = "done"
EVENT = "event"
HISTORY = "history"


def wm(t):
    return Watermark(t)


def run(queue_count, steps):
    """Feed ``(queue, what)`` steps; return what each step answered."""
    coalescer = create_coalescer(queue_count)
    answers = []
    for queue, what in steps:
        if what == DONE:
            answers.append(coalescer.queue_done(queue))
        elif what == EVENT:
            answers.append(coalescer.observe_event(queue))
        elif what == HISTORY:
            answers.append(coalescer.check_wm_history())
        else:
            answers.append(coalescer.observe_wm(queue, what))
    return coalescer, answers


def test_zero_inputs_produce_nothing_and_refuse_observations():
    coalescer = create_coalescer(0)
    assert coalescer.check_wm_history() is NO_NEW_WM
    assert (coalescer.top_observed_wm, coalescer.coalesced_wm) == (MIN_TIMESTAMP, MIN_TIMESTAMP)
    with pytest.raises(TypeError):
        coalescer.observe_wm(0, wm(1))
    with pytest.raises(TypeError):
        coalescer.queue_done(0)


def test_single_input_passes_everything_through():
    coalescer, answers = run(1, [(0, wm(1)), (0, IDLE), (0, IDLE), (0, wm(2)), (0, DONE)])
    assert answers == [wm(1), IDLE, IDLE, wm(2), NO_NEW_WM]
    assert (coalescer.top_observed_wm, coalescer.coalesced_wm) == (2, 2)


def test_single_input_refuses_a_watermark_that_does_not_increase():
    coalescer = create_coalescer(1, ["queue a->b"])
    coalescer.observe_wm(0, wm(5))
    with pytest.raises(WatermarkOrderError, match=r"queue a->b: last one=5, new one=5"):
        coalescer.observe_wm(0, wm(5))


def test_the_minimum_over_the_queues_is_forwarded_once_both_reached_it():
    _, answers = run(2, [(0, wm(1)), (1, wm(2)), (0, wm(3)), (1, wm(4)), (0, wm(5))])
    assert answers == [NO_NEW_WM, wm(1), wm(2), wm(3), wm(4)]


def test_a_watermark_per_queue_must_increase_strictly():
    coalescer = create_coalescer(2, ["first", "second"])
    coalescer.observe_wm(1, wm(7))
    with pytest.raises(WatermarkOrderError, match=r"second: last one=7, new one=6"):
        coalescer.observe_wm(1, wm(6))
    coalescer.queue_done(0)
    with pytest.raises(WatermarkOrderError, match=r"first: last one=DONE"):
        coalescer.observe_wm(0, wm(8))


def test_an_idle_queue_is_left_out_of_the_minimum():
    _, answers = run(2, [(0, wm(1)), (1, IDLE), (0, wm(2))])
    assert answers == [NO_NEW_WM, wm(1), wm(2)]


def test_a_queue_back_from_idle_with_a_lower_wm_does_not_pull_the_output_back():
    coalescer, answers = run(2, [(0, wm(10)), (1, IDLE), (1, wm(4)), (1, wm(12)), (0, wm(11))])
    assert answers == [NO_NEW_WM, wm(10), NO_NEW_WM, NO_NEW_WM, wm(11)]
    assert coalescer.coalesced_wm == 11 and coalescer.top_observed_wm == 12


def test_an_event_brings_an_idle_queue_back_and_it_holds_the_minimum_again():
    _, answers = run(2, [(1, wm(1)), (1, IDLE), (0, wm(5)), (1, EVENT), (0, wm(6)),
                         (1, wm(7))])
    # wm(1) is not forwarded: queue 0 was at MIN; when queue 1 went idle, queue 0 ruled alone.
    assert answers == [NO_NEW_WM, NO_NEW_WM, wm(5), None, NO_NEW_WM, wm(6)]


def test_all_idle_forwards_the_top_wm_then_idle_whatever_the_order():
    first_low = run(2, [(0, wm(1)), (1, wm(2)), (0, IDLE), (1, IDLE), (0, HISTORY), (0, HISTORY)])[1]
    first_high = run(2, [(0, wm(1)), (1, wm(2)), (1, IDLE), (0, IDLE), (0, HISTORY), (0, HISTORY)])[1]
    assert first_low == [NO_NEW_WM, wm(1), wm(2), IDLE, NO_NEW_WM, NO_NEW_WM]
    assert first_high == [NO_NEW_WM, wm(1), NO_NEW_WM, wm(2), IDLE, NO_NEW_WM]


def test_all_idle_without_a_new_top_answers_idle_once():
    _, answers = run(2, [(0, wm(3)), (1, wm(3)), (0, IDLE), (1, IDLE), (1, IDLE), (0, HISTORY)])
    assert answers == [NO_NEW_WM, wm(3), NO_NEW_WM, IDLE, NO_NEW_WM, NO_NEW_WM]


def test_done_releases_the_minimum_and_all_done_says_nothing_more():
    _, answers = run(3, [(0, wm(1)), (1, wm(5)), (2, wm(9)), (0, DONE), (1, DONE), (2, DONE)])
    assert answers == [NO_NEW_WM, NO_NEW_WM, wm(1), wm(5), wm(9), NO_NEW_WM]


def test_done_of_every_active_queue_with_an_idle_one_gives_the_top_wm_then_idle():
    _, answers = run(2, [(0, wm(4)), (1, IDLE), (0, DONE), (0, HISTORY)])
    # queue 0 alone forwards 4; once it is done only an idle queue remains: IDLE.
    assert answers == [NO_NEW_WM, wm(4), IDLE, NO_NEW_WM]


def test_done_with_an_idle_queue_and_an_unforwarded_top():
    _, answers = run(3, [(0, wm(4)), (1, wm(8)), (2, IDLE), (1, DONE), (0, DONE), (0, HISTORY)])
    assert answers == [NO_NEW_WM, NO_NEW_WM, wm(4), NO_NEW_WM, wm(8), IDLE]


def test_an_idle_queue_that_comes_back_after_the_all_idle_answer():
    _, answers = run(2, [(0, IDLE), (1, IDLE), (0, wm(3)), (1, wm(2)), (1, wm(4))])
    assert answers == [NO_NEW_WM, IDLE, wm(3), NO_NEW_WM, NO_NEW_WM]


def test_metrics_follow_the_observations():
    coalescer, _ = run(2, [(0, wm(5)), (1, wm(2)), (1, IDLE)])
    assert (coalescer.top_observed_wm, coalescer.coalesced_wm) == (5, 5)


def test_bad_queue_counts_and_names_are_refused():
    with pytest.raises(ValueError, match="queue_count must be >= 0, got -1"):
        create_coalescer(-1)
    with pytest.raises(ValueError, match="1 queue names given for 2 queues"):
        create_coalescer(2, ["only one"])


def test_idle_is_the_max_timestamp():
    assert IDLE_MESSAGE.timestamp == MAX_TIMESTAMP and NO_NEW_WM is None


def test_a_queue_active_again_cancels_the_idle_still_pending():
    _, answers = run(2, [(0, wm(1)), (1, wm(2)), (1, IDLE), (0, IDLE), (0, wm(3)), (0, HISTORY)])
    assert answers == [NO_NEW_WM, wm(1), NO_NEW_WM, wm(2), wm(3), NO_NEW_WM]


def _reference_outputs(operations, queue_count):
    """What a coalescer answers, recomputed from scratch after every step (the minimum over the
    queues not idle, never going back; top wm then IDLE once all are idle or done)."""
    wms, idle = [MIN_TIMESTAMP] * queue_count, [False] * queue_count
    coalesced, top, all_idle, outputs = MIN_TIMESTAMP, MIN_TIMESTAMP, False, []
    for kind, queue, value in operations:
        if kind == "event":
            if idle[queue]:
                idle[queue], all_idle = False, False
            outputs.append(None)
            continue
        if kind == "wm" and value == MAX_TIMESTAMP:
            idle[queue] = True
        elif kind == "wm":
            idle[queue], all_idle, wms[queue], top = False, False, value, max(top, value)
        else:
            wms[queue] = MAX_TIMESTAMP
        if all_idle:
            outputs.append(NO_NEW_WM)
            continue
        active = [wm for wm, is_idle in zip(wms, idle) if not is_idle]
        minimum = min(active, default=MAX_TIMESTAMP)
        if minimum < MAX_TIMESTAMP:
            outputs.append(Watermark(minimum) if minimum > coalesced else NO_NEW_WM)
            coalesced = max(coalesced, minimum)
            continue
        all_idle = True
        some_not_done = any(wm < MAX_TIMESTAMP for wm in wms)
        if top > coalesced:
            coalesced = top
            outputs.append(Watermark(top))
        else:
            outputs.append(IDLE_MESSAGE if some_not_done else NO_NEW_WM)
    return outputs


@pytest.mark.parametrize("seed", range(40))
def test_random_observations_answer_as_recomputing_from_scratch(seed):
    """Watermarks, IDLEs, events and DONEs in random order on 2-6 queues (the coalescer keeps a
    count of queues without a watermark instead of a pass over all of them per DONE)."""
    import random

    rng = random.Random(seed)
    queue_count = rng.randint(2, 6)
    coalescer = create_coalescer(queue_count)
    last, done, operations = [MIN_TIMESTAMP] * queue_count, set(), []
    for _ in range(60):
        queue = rng.randrange(queue_count)
        if queue in done:
            continue
        roll = rng.random()
        if roll < 0.1:
            operations.append(("done", queue, None))
            done.add(queue)
        elif roll < 0.3:
            operations.append(("event", queue, None))
        elif roll < 0.45 and last[queue] < MAX_TIMESTAMP:
            operations.append(("wm", queue, MAX_TIMESTAMP))
        elif last[queue] < MAX_TIMESTAMP:
            last[queue] = max(last[queue], 0) + rng.randint(1, 5)
            operations.append(("wm", queue, last[queue]))
    outputs = []
    for kind, queue, value in operations:
        if kind == "event":
            coalescer.observe_event(queue)
            outputs.append(None)
        elif kind == "done":
            outputs.append(coalescer.queue_done(queue))
        else:
            outputs.append(coalescer.observe_wm(queue, Watermark(value)))
    assert outputs == _reference_outputs(operations, queue_count)
