"""Before each execution the coordinator asks every member whether it is linked to all others:
all at once, not one after another (that made a job's start wait k round trips)."""

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from jet.cluster import messages
from jet.cluster.execution_driver import ExecutionDriver


class FakeCoordinator:
    def __init__(self, members: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2 * members)
        self.control = SimpleNamespace(member_rejoin_timeout_ms=3_000)
        self._shut_down = False
        self._all_asked = threading.Barrier(members, timeout=1.0)
        self.pings = 0
        self._members = members
        self._lock = threading.Lock()

    def _call(self, member, msg_type, payload, timeout_s):
        assert msg_type == messages.PING
        with self._lock:
            self.pings += 1
        self._all_asked.wait()  # answers only once every member has been asked
        return messages.encode_message({"joined": [m for m in range(self._members) if m != member]})


def test_the_mesh_check_pings_every_member_at_once():
    coordinator = FakeCoordinator(8)
    try:
        ExecutionDriver._await_mesh(coordinator, list(range(8)))
    finally:
        coordinator._pool.shutdown()
    assert coordinator.pings == 8  # one round was enough
