"""The coordinator's mesh check asks every member at once (one round trip, not k)."""

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from jet.cluster import messages
from jet.cluster.execution_driver import ExecutionDriver


class BarrierMembers(ExecutionDriver):
    """Members that answer a ping only once every one of them was asked (a barrier of k)."""

    def __init__(self, members, joined=None):
        self.control = SimpleNamespace(member_rejoin_timeout_ms=3000)
        self._shut_down = False
        self._pool = ThreadPoolExecutor(max_workers=2 * len(members))
        self._barrier = threading.Barrier(len(members), timeout=1.0)
        self._joined = joined or {}
        self.members = members
        self.pings = 0

    def _call(self, member, msg_type, payload, timeout_s):
        assert msg_type == messages.PING
        self.pings += 1
        self._barrier.wait()
        joined = self._joined.get(member, [m for m in self.members if m != member])
        return messages.encode_message({"joined": joined})


def test_every_member_is_pinged_at_once():
    members = list(range(8))
    driver = BarrierMembers(members)
    try:
        assert driver._await_mesh(members)
        assert driver.pings == len(members)  # one round, answered together
    finally:
        driver._pool.shutdown()


def test_a_member_missing_a_link_keeps_the_check_waiting_until_its_bound():
    members = [0, 1, 2]
    driver = BarrierMembers(members, joined={2: [0]})  # member 2 has no link to member 1 yet
    driver.control.member_rejoin_timeout_ms = 300
    try:
        assert not driver._await_mesh(members)
        assert driver.pings >= 2 * len(members)  # asked again, every member each round
    finally:
        driver._pool.shutdown()
