"""Heartbeats on the member streams: a silent peer is declared lost, as a broken stream is.

A killed process is noticed at once (its kernel closes the TCP connection and the stream breaks);
a process that is stopped (SIGSTOP), hung or cut off by the network leaves the connection open and
silent. So every ``interval`` each live member link that carried no frame within the interval
gets a heartbeat (an empty gRPC message, see :mod:`jet.cluster.links.transport`; a frame is proof of
life enough, and travels the same queue), and a link from which nothing arrived for ``timeout``
is failed with an error naming the silence, which takes the same path as a broken stream
(``on_connection_lost``). gRPC's keepalive pings do not notice a SIGSTOPped peer: with a 30 s
heartbeat timeout its loss was seen after 34 s, by that timeout (bench/README.md).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Iterable

from jet.cluster.links.errors import LinkError
from jet.cluster.links.transport import FrameLink

log = logging.getLogger("jet.cluster.links.heartbeat")

DEFAULT_HEARTBEAT_INTERVAL_MS = 1_000
DEFAULT_HEARTBEAT_TIMEOUT_MS = 5_000


class SilentPeerError(LinkError):
    """Nothing arrived from a peer member for longer than the heartbeat timeout."""


def check_heartbeat_settings(interval_ms: int, timeout_ms: int) -> None:
    """``ValueError`` naming both settings unless the timeout spans more than one interval."""
    if interval_ms < 1 or timeout_ms <= interval_ms:
        raise ValueError(f"heartbeat_timeout_ms ({timeout_ms}) must be greater than heartbeat_interval_ms "
                         f"({interval_ms}), and the interval at least 1 ms")


class HeartbeatMonitor:
    """A thread that sends heartbeats on ``links()`` and fails the links that went silent."""

    def __init__(self, links: Callable[[], Iterable[FrameLink]], interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
                 timeout_ms: int = DEFAULT_HEARTBEAT_TIMEOUT_MS, *, name: str = "jet-heartbeat",
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_heartbeat_settings(interval_ms, timeout_ms)
        self._links = links
        self.interval_s = interval_ms / 1000
        self.timeout_s = timeout_ms / 1000
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "HeartbeatMonitor":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def beat(self) -> list[FrameLink]:
        """One round: fail the silent links, send a heartbeat on the others that sent no frame
        within the interval; the links failed."""
        now = self._clock()
        failed = []
        for link in list(self._links()):
            silent_s = now - link.last_message_at
            if silent_s > self.timeout_s:
                failed.append(link)
                link.fail(SilentPeerError(
                    f"nothing arrived from member {link.peer_index} for {silent_s:.1f} s "
                    f"(heartbeat timeout {self.timeout_s * 1000:.0f} ms): it is stopped, hung or cut off"))
                continue
            if now - link.last_frame_sent_at < self.interval_s:
                continue  # a busy link: its frames tell the peer we are alive
            try:
                link.send_heartbeat()
            except ConnectionError:
                pass  # closed meanwhile: its loss is being reported
        return failed

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except Exception:  # noqa: BLE001 - the monitor must survive one bad round
                log.exception("a heartbeat round failed")
