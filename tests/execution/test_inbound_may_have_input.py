"""InboundEdgeStream.may_have_input, the cheap test a mostly idle reader (a network sender) makes
before draining: when it says no, a drain must find nothing, whatever came before."""

import random

import pytest

from jet.core.inbox import Inbox
from jet.core.special_items import IDLE_MESSAGE, Watermark
from jet.execution.inbound import InboundEdgeStream
from jet.execution.queues import DONE_ITEM, SpscQueue
from jet.execution.tasklet import NO_PROGRESS, WAS_ALREADY_DONE


def test_empty_queues_have_no_input_and_an_offered_chunk_is_input():
    queues = [SpscQueue(16), SpscQueue(16)]
    stream = InboundEdgeStream(0, 0, queues)
    assert not stream.may_have_input()
    queues[1].offer_chunk([1, 2])
    assert stream.may_have_input()
    inbox = Inbox()
    stream.drain_to(inbox)
    assert list(inbox.take_chunk(len(inbox))) == [1, 2] and not stream.may_have_input()


def test_an_idle_message_due_after_the_last_watermark_is_input_with_every_queue_empty():
    queues = [SpscQueue(16), SpscQueue(16)]
    stream = InboundEdgeStream(0, 0, queues)
    inbox = Inbox()
    queues[0].offer_special(Watermark(5))
    queues[1].offer_special(Watermark(3))
    queues[1].offer_special(IDLE_MESSAGE)
    queues[0].offer_special(IDLE_MESSAGE)
    while stream.pending_watermark != Watermark(5):
        stream.drain_to(inbox)
    stream.pending_watermark = None
    # Every queue is idle now: the coalesced 5 went out, and IDLE is due on the next drain.
    assert all(q.is_empty() for q in queues) and stream.may_have_input()
    stream.drain_to(inbox)
    assert stream.pending_watermark is IDLE_MESSAGE and not inbox


@pytest.mark.parametrize("seed", range(60))
def test_a_stream_without_input_drains_nothing(seed):
    rng = random.Random(seed)
    count = rng.randint(1, 4)
    queues = [SpscQueue(1 << 20) for _ in range(count)]
    stream = InboundEdgeStream(0, 0, queues)
    last_wm, done = [0] * count, [False] * count
    for _ in range(rng.randint(5, 60)):
        for _ in range(rng.randint(0, 3)):
            q = rng.randrange(count)
            if done[q]:
                continue
            what = rng.random()
            if what < 0.4:
                queues[q].offer_chunk([rng.random()])
            elif what < 0.65:
                last_wm[q] += rng.randint(1, 5)
                queues[q].offer_special(Watermark(last_wm[q]))
            elif what < 0.9:
                queues[q].offer_special(IDLE_MESSAGE)
            else:
                queues[q].offer_special(DONE_ITEM)
                done[q] = True
        if rng.random() < 0.5:
            continue  # several offers before the next drain
        for _ in range(rng.randint(1, 3)):
            answer = stream.may_have_input()
            inbox = Inbox()
            state = stream.drain_to(inbox)
            if not answer:
                assert state in (NO_PROGRESS, WAS_ALREADY_DONE) and not inbox
                assert stream.pending_watermark is None and stream.pending_barrier is None
            stream.pending_watermark = stream.pending_barrier = None  # taken by the reader
