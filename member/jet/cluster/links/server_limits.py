"""How a member's gRPC server shares its threads, so that members' control calls never wait.

A synchronous gRPC server runs every call on one pool thread for the call's whole life: a client's
frame stream (a Spark task or driver) holds its thread for as long as it is open, and a client's
``job_wait`` for up to half a minute. If those could take every thread, members' calls
(``OpenLink``, ``leaving``) would queue behind them. So each kind of long call has a bound of its
own (:class:`ServerLimits`), the pool has a thread for every one of them plus a reserve for
members' calls, and a call beyond its bound is refused at once with ``RESOURCE_EXHAUSTED`` instead
of waiting for a thread. Members' links are sockets of their own (:mod:`jet.cluster.links.tcp_links`):
they are bounded too, but hold no gRPC thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

DEFAULT_CLIENT_STREAMS = 64
DEFAULT_CLIENT_CALLS = 32
DEFAULT_MEMBER_STREAMS = 16
MEMBER_CALL_THREADS = 16


@dataclass(frozen=True)
class ServerLimits:
    """The most calls of each kind a member serves at once."""

    client_streams: int = DEFAULT_CLIENT_STREAMS
    """Frame streams of clients (Spark tasks and drivers)."""
    client_calls: int = DEFAULT_CLIENT_CALLS
    """Control calls of clients (submit, status, wait, results, ...)."""
    member_streams: int = DEFAULT_MEMBER_STREAMS
    """Links of other members: one per lower-index member, so the member count suffices."""
    member_call_threads: int = MEMBER_CALL_THREADS
    """Threads no stream and no client call can take: members' calls are never refused."""

    def __post_init__(self) -> None:
        for name in ("client_streams", "client_calls", "member_streams", "member_call_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"ServerLimits.{name} must be >= 1, got {getattr(self, name)}")

    @property
    def threads(self) -> int:
        """The size of the server's thread pool: a thread for every bounded call, and the reserve."""
        return self.client_streams + self.client_calls + self.member_call_threads


class Slots:
    """A bounded number of calls of one kind in progress."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._in_use = 0
        self._lock = threading.Lock()

    @property
    def in_use(self) -> int:
        return self._in_use

    def take(self) -> Callable[[], None] | None:
        """A slot, as the function that gives it back (safe to call more than once); ``None``
        when all ``limit`` slots are taken."""
        with self._lock:
            if self._in_use >= self.limit:
                return None
            self._in_use += 1
        given_back = threading.Event()

        def give_back() -> None:
            with self._lock:
                if given_back.is_set():
                    return
                given_back.set()
                self._in_use -= 1

        return give_back
