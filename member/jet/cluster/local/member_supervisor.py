"""Restarts the local cluster's member processes that die, as Kubernetes recreates a member's pod.

A monitor thread polls the processes; one that ended without being asked to (a nonzero exit status:
killed by a signal, crashed, failed to start) is started again by ``respawn(index)``, with the same
index, ports and environment, so it rejoins its cluster by itself. A member that stopped in order
(exit status 0: it was sent SIGTERM) or whose stdin from this side was closed was asked to go, and
stays down. A member that dies again soon after a restart is restarted after a growing delay, so
one that cannot start does not spin.

The monitor thread is the parent thread of the processes it starts, and a member dies with that
thread (``PR_SET_PDEATHSIG``), so it must outlive them: :meth:`stop_restarting` ends the restarts
and :meth:`join` ends the thread once the members are stopped.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from typing import Callable

log = logging.getLogger("jet.local_cluster")

POLL_INTERVAL_S = 0.05
QUICK_DEATH_S = 5.0
"""A member that dies within this long of its restart is restarted after a growing delay."""
FIRST_RESTART_DELAY_S = 0.5
MAX_RESTART_DELAY_S = 10.0


class MemberSupervisor:
    """Watches ``processes`` (a list it updates in place when it restarts one)."""

    def __init__(self, processes: list[subprocess.Popen], respawn: Callable[[int, int], subprocess.Popen],
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        """``respawn(index, exit_status)`` starts member ``index`` again and returns its process."""
        self._processes = processes
        self._respawn = respawn
        self._clock = clock
        self._restarted_at = [float("-inf")] * len(processes)
        self._delays = [0.0] * len(processes)
        self._due: dict[int, float] = {}
        self._left_down: set[int] = set()
        self._held: set[int] = set()
        self._restarting = threading.Event()
        self._restarting.set()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.restarts = 0
        """How many member processes were restarted."""
        self._thread = threading.Thread(target=self._run, name="jet-member-supervisor", daemon=True)

    def start(self) -> "MemberSupervisor":
        self._thread.start()
        return self

    def stop_restarting(self) -> None:
        """No restart from now on (one under way finishes first)."""
        with self._lock:
            self._restarting.clear()

    def hold(self, index: int) -> None:
        """Member ``index`` is not restarted when it dies, until :meth:`release`."""
        with self._lock:
            self._held.add(index)

    def release(self, index: int) -> None:
        """Member ``index`` is restarted again when it dies (at once when it is dead now)."""
        with self._lock:
            self._held.discard(index)

    def join(self, timeout_s: float | None = None) -> None:
        """End the monitor thread (after :meth:`stop_restarting` and once the members are gone)."""
        self.stop_restarting()
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._done.wait(POLL_INTERVAL_S):
            for index in range(len(self._processes)):
                if self._restarting.is_set():
                    self._check(index)

    def _check(self, index: int) -> None:
        process = self._processes[index]
        status = process.poll()
        if status is None or index in self._left_down or index in self._held:
            return
        if index not in self._due:
            if status == 0 or (process.stdin is not None and process.stdin.closed):
                log.info("member %d stopped (exit status %d) and stays down", index, status)
                self._left_down.add(index)
                return
            quick = self._clock() - self._restarted_at[index] < QUICK_DEATH_S
            self._delays[index] = (min(max(2 * self._delays[index], FIRST_RESTART_DELAY_S), MAX_RESTART_DELAY_S)
                                   if quick else 0.0)
            self._due[index] = self._clock() + self._delays[index]
            log.warning("member %d ended with exit status %d; restarting it%s", index, status,
                        f" in {self._delays[index]:.1f} s" if self._delays[index] else "")
        if self._clock() < self._due[index]:
            return
        with self._lock:
            if not self._restarting.is_set():
                return
            if process.stdin is not None:
                process.stdin.close()
            try:
                self._processes[index] = self._respawn(index, status)
            except OSError as error:
                log.warning("member %d could not be restarted: %s; trying again", index, error)
                self._due[index] = self._clock() + MAX_RESTART_DELAY_S
                return
            del self._due[index]
            self._restarted_at[index] = self._clock()
            self.restarts += 1
