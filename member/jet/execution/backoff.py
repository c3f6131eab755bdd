"""Exponential idle backoff for worker threads (Jet's BackoffIdleStrategy, parks only)."""

from __future__ import annotations

import time
from typing import Callable

#: Jet 0.5's cooperative pool: 1 us doubling to a 1 ms cap (2, 4, ... 512 us, then 1 ms).
DEFAULT_MIN_PARK_NS = 1_000
DEFAULT_MAX_PARK_NS = 1_000_000


class BackoffIdleStrategy:
    """After the n-th idle pass in a row (n >= 1), park ``min(min_park << n, max_park)`` ns."""

    def __init__(self, min_park_ns: int = DEFAULT_MIN_PARK_NS,
                 max_park_ns: int = DEFAULT_MAX_PARK_NS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if min_park_ns < 1 or max_park_ns < min_park_ns:
            raise ValueError(f"need 1 <= min_park_ns <= max_park_ns, got {min_park_ns}, {max_park_ns}")
        self.min_park_ns = min_park_ns
        self.max_park_ns = max_park_ns
        self._sleep = sleep

    def park_ns(self, idle_count: int) -> int:
        """How long the ``idle_count``-th consecutive idle pass parks."""
        if idle_count <= 0:
            return 0
        shift = min(idle_count, 62)
        return min(self.min_park_ns << shift, self.max_park_ns)

    def idle(self, idle_count: int) -> int:
        """Park for the ``idle_count``-th idle pass; return the nanoseconds asked for."""
        park = self.park_ns(idle_count)
        if park:
            self._sleep(park / 1e9)
        return park
