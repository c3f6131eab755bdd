"""When to scale jobs up after members join (Jet's ``scaleUpDelayMillis``).

A join arms a countdown of ``delay_ms``; a later join starts it again, so a cluster that gains
several members in a row restarts its jobs once, after the last one. When the countdown runs out
the timer calls ``scale_up()`` on a thread of its own; a True answer (a job was still starting on
too few members, so it could not be restarted yet) arms the countdown once more.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

log = logging.getLogger("jet.cluster.coordinator")


class ScaleUpTimer:
    """Calls ``scale_up()`` ``delay_ms`` after the last :meth:`member_joined`."""

    def __init__(self, delay_ms: int, scale_up: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._delay_s = delay_ms / 1000
        self._scale_up = scale_up
        self._clock = clock
        self._changed = threading.Condition()
        self._due: float | None = None
        self._stopped = False
        self._thread: threading.Thread | None = None

    def member_joined(self) -> None:
        """(Re)start the countdown; quick, so callers may hold their own locks."""
        with self._changed:
            if self._stopped:
                return
            self._due = self._clock() + self._delay_s
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="jet-scale-up", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def stop(self) -> None:
        """No more calls of ``scale_up`` (one under way finishes)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def _run(self) -> None:
        while self._wait_until_due():
            try:
                again = self._scale_up()
            except Exception:  # noqa: BLE001 - the timer must outlive one bad round
                log.exception("scaling jobs up failed")
                again = False
            if again:
                self.member_joined()

    def _wait_until_due(self) -> bool:
        """Block until the countdown ran out (True) or the timer stopped (False)."""
        with self._changed:
            while not self._stopped:
                if self._due is not None:
                    left = self._due - self._clock()
                    if left <= 0:
                        self._due = None
                        return True
                    self._changed.wait(left)
                else:
                    self._changed.wait()
            return False
