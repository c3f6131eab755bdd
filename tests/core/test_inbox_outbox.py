import pytest

from jet.core import Inbox, Outbox


def test_inbox_item_methods_follow_jet():
    inbox = Inbox()
    assert inbox.is_empty() and inbox.peek() is None and inbox.poll() is None
    with pytest.raises(IndexError):
        inbox.remove()
    inbox.add_chunk([1, 2, 3, 4])
    inbox.add_chunk([5])
    assert len(inbox) == 5 and inbox.peek() == 1
    assert inbox.poll() == 1 and inbox.remove() == 2
    seen = []
    assert inbox.drain(seen.append) == 3
    assert seen == [3, 4, 5] and inbox.is_empty()


def test_inbox_take_chunk_takes_at_most_the_limit():
    inbox = Inbox()
    inbox.add_chunk(list(range(10)))
    inbox.poll()
    assert inbox.take_chunk(4) == [1, 2, 3, 4]
    assert inbox.take_chunk() == [5, 6, 7, 8, 9]
    assert inbox.take_chunk() == [] and inbox.is_empty()


def test_outbox_refuses_when_full_and_offers_to_all_ordinals_all_or_nothing():
    outbox = Outbox(2, [2, 1])
    assert outbox.offer("a")
    assert not outbox.offer("b"), "ordinal 1 is full, so the broadcast offer is refused whole"
    assert outbox.buckets == [["a"], ["a"]]
    assert outbox.offer("b", 0)
    assert not outbox.offer("c", 0)
    assert outbox.offer("x", [1]) is False
    outbox.buckets[1].clear()
    assert outbox.offer("y", [1]) and outbox.buckets[1] == ["y"]


def test_outbox_offer_chunk_accepts_whole_chunks_while_below_capacity():
    outbox = Outbox(1, 4)
    assert outbox.offer_chunk([1, 2, 3])
    assert outbox.offer_chunk([4, 5, 6]), "below capacity: the chunk may overshoot"
    assert not outbox.offer_chunk([7])
    assert outbox.buckets == [[1, 2, 3, 4, 5, 6]]
    assert not outbox.has_room()


def test_a_chunk_taken_from_an_empty_inbox_is_the_callers_alone():
    taken = Inbox().take_chunk()
    taken.append("leaked")
    assert Inbox().is_empty() and Inbox().take_chunk() == []
    drained = Inbox()
    drained.add_chunk([1])
    drained.take_chunk()
    drained.take_chunk().append("leaked again")
    assert drained.is_empty() and len(Inbox()) == 0 and Inbox().peek_chunk(3) == []
