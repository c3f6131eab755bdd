"""A member's init waits for its streams to the execution's other members (the mesh check the
coordinator used to make with a ping round before every execution)."""

import threading
import time

from jet.cluster.links.membership import Membership
from jet.cluster.links.transport import FrameLink


class ControlStandIn:
    def close(self):
        pass


def _membership(index=0, count=4):
    return Membership(index, count, on_joined=lambda peer: None, on_lost=lambda peer, error: None)


def _join(membership, peer):
    assert membership.joined(peer, FrameLink(peer, None, None), ControlStandIn())


def test_waiting_ends_when_the_last_wanted_peer_joins():
    membership = _membership()
    _join(membership, 1)
    later = threading.Timer(0.2, _join, (membership, 3))
    later.start()
    started = time.monotonic()
    try:
        assert membership.wait_joined([0, 1, 3], timeout_s=30) == []
    finally:
        later.cancel()
    assert time.monotonic() - started < 10  # woken by the join, not by the bound
    assert membership.joined_peers() == [1, 3]  # member 2 was not wanted


def test_peers_still_missing_at_the_bound_are_named():
    membership = _membership()
    _join(membership, 2)
    assert membership.wait_joined([0, 1, 2, 3], timeout_s=0.2) == [1, 3]


def test_a_lost_peer_is_waited_for_again():
    membership = _membership(index=1, count=2)
    link = FrameLink(0, None, None)
    assert membership.joined(0, link, ControlStandIn())
    assert membership.wait_joined([0, 1], timeout_s=0) == []
    assert membership.lost(0, link, ConnectionError("gone"))
    assert membership.wait_joined([0, 1], timeout_s=0.1) == [0]
