"""Which members are joined now, over which stream, and keeping the streams up.

Of each pair of members the lower index dials the higher one and both send their frames over that
one stream (the higher one also keeps a control channel to the lower one). A stream is either up or
being re-established, for the life of the member:

- the dialling side runs a :class:`PeerDialer` per higher peer: probe its address (TCP, resolving
  the name again each time, so a Kubernetes pod recreated under its DNS name with a new IP is
  found), open a stream on a fresh channel, wait until the peer accepts it (its first message),
  join; after a loss, the same again, with backoff, until this member stops;
- the serving side joins a lower peer when its stream arrives (authenticated by the member key,
  refused while a live stream from that index exists, so a restarted member is accepted once its
  old stream is known lost: broken, or silent past the heartbeat timeout).

:class:`Membership` records the live link of each peer. Joins and losses of a peer are applied under
one lock in the order they happen, and only the current link's loss counts: a stream that never
joined or was already replaced is no member lost. ``on_joined(peer)`` and ``on_lost(peer, error)``
run under that lock, so they must not wait on anything that needs a join or a loss.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from jet.cluster.links.errors import LinkError
from jet.cluster.links.peers import PeerAddress, tcp_probe
from jet.cluster.links.transport import FrameLink, PeerConnection

log = logging.getLogger("jet.cluster.links.membership")

FIRST_DIAL_BACKOFF_S = 0.05
MAX_DIAL_BACKOFF_S = 1.0
"""A dialler retries at least this often, for its whole life: a rejoin is never waited out."""
PROBE_TIMEOUT_S = 1.0
ACCEPT_POLL_S = 0.05


class Membership:
    """The joined peers of one member, each with its current stream and control connection.

    ``connections`` maps each peer that has ever joined to its control connection (kept after a
    loss, whose channel reconnects by itself, until a rejoin brings a fresh one); ``all_joined``
    is set while every other member is joined.
    """

    def __init__(self, index: int, member_count: int, *, on_joined: Callable[[int], None],
                 on_lost: Callable[[int, BaseException], None]) -> None:
        self.index = index
        self.member_count = member_count
        self._on_joined = on_joined
        self._on_lost = on_lost
        self._lock = threading.RLock()
        self._joins_changed = threading.Condition(self._lock)
        self._links: dict[int, FrameLink] = {}
        self.connections: dict[int, PeerConnection] = {}
        self.all_joined = threading.Event()
        self.joins: dict[int, int] = {}
        """How many times each peer joined (1 after the start, more after rejoins)."""
        self._closed = False
        if member_count == 1:
            self.all_joined.set()

    def joined(self, peer: int, link: FrameLink, control: PeerConnection) -> bool:
        """``peer`` is joined over ``link``, with ``control`` for control calls; False (and nothing
        changes) when the link closed meanwhile or the membership is closed."""
        with self._lock:
            if link.closed or self._closed:
                return False
            replaced = self.connections.get(peer)
            self._links[peer] = link
            self.connections[peer] = control
            self.joins[peer] = self.joins.get(peer, 0) + 1
            if len(self._links) == self.member_count - 1:
                self.all_joined.set()
            if replaced is not None and replaced is not control:
                replaced.close()
            self._on_joined(peer)
            self._joins_changed.notify_all()
            return True

    def lost(self, peer: int, link: FrameLink | None, error: BaseException) -> bool:
        """``link`` to ``peer`` broke; True when it was the current one (the peer is lost)."""
        with self._lock:
            if link is None or self._links.get(peer) is not link:
                log.debug("member %d: a stream with member %d that was not joined ended: %s",
                          self.index, peer, error)
                return False
            del self._links[peer]
            self.all_joined.clear()
            self._on_lost(peer, error)
            return True

    def link(self, peer: int) -> FrameLink | None:
        """The current stream with ``peer``, if joined."""
        return self._links.get(peer)

    def links(self) -> list[FrameLink]:
        """The current streams with every joined peer."""
        with self._lock:
            return list(self._links.values())

    def joined_peers(self) -> list[int]:
        with self._lock:
            return sorted(self._links)

    def wait_joined(self, peers, timeout_s: float) -> list[int]:
        """Wait up to ``timeout_s`` until each of ``peers`` (this member itself aside) is joined;
        the ones still missing then (empty when all joined)."""
        wanted = [p for p in peers if p != self.index]
        with self._lock:
            self._joins_changed.wait_for(lambda: all(p in self._links for p in wanted), timeout_s)
            return [p for p in wanted if p not in self._links]

    def missing_peers(self) -> list[int]:
        with self._lock:
            return [p for p in range(self.member_count) if p != self.index and p not in self._links]

    def send(self, peer: int, frame: bytes) -> None:
        """Send a frame over the current stream with ``peer``; ``ConnectionError`` when not joined."""
        link = self._links.get(peer)
        if link is None:
            raise LinkError(f"member {self.index} is not connected to member {peer} now")
        link.send(frame)

    def close(self) -> None:
        """Close every stream and control connection (no loss is reported)."""
        with self._lock:
            self._closed = True
            links, connections = list(self._links.values()), list(self.connections.values())
            self._links.clear()
            self.all_joined.clear()
        for link in links:
            link.close()
        for connection in connections:
            connection.close()


class PeerDialer:
    """Keeps the stream to one higher-index peer up for as long as ``stopped`` is not set.

    ``dial(on_connection_lost)`` opens a stream (a :class:`PeerConnection` whose loss calls the given
    callback). Logs one line per change of state: reached, unreachable, joined.
    """

    def __init__(self, membership: Membership, peer: int, address: PeerAddress,
                 dial: Callable[[Callable[[int, BaseException], None]], PeerConnection],
                 stopped: threading.Event, accept_timeout_s: float, *,
                 probe: Callable[[PeerAddress], bool] = lambda a: tcp_probe(a, PROBE_TIMEOUT_S)) -> None:
        self.membership = membership
        self.peer = peer
        self.address = address
        self._dial = dial
        self._stopped = stopped
        self._accept_timeout_s = accept_timeout_s
        self._probe = probe
        self._thread = threading.Thread(target=self._run, name=f"jet-dial-{peer}", daemon=True)
        self._state = "new"
        self._last_refusal: BaseException | None = None
        """Why the current attempt's stream ended before it was accepted."""

    def start(self) -> "PeerDialer":
        self._thread.start()
        return self

    def _run(self) -> None:
        backoff_s = FIRST_DIAL_BACKOFF_S
        while not self._stopped.is_set():
            link = self._try_once()
            if link is not None:
                backoff_s = FIRST_DIAL_BACKOFF_S
                link.closed_event.wait()  # until lost (or closed because this member stops)
                continue
            self._stopped.wait(backoff_s)
            backoff_s = min(backoff_s * 2, MAX_DIAL_BACKOFF_S)

    def _try_once(self) -> FrameLink | None:
        """Dial once; the joined link, or None after logging why not (once per state)."""
        me, peer = self.membership.index, self.peer
        if not self._probe(self.address):
            self._enter("unreachable", logging.INFO, "member %d cannot reach member %d at %s yet; "
                        "retrying at least every %.1f s", me, peer, self.address, MAX_DIAL_BACKOFF_S)
            return None
        attempt: list[FrameLink] = []

        def lost(peer_index: int, error: BaseException) -> None:
            self.membership.lost(peer_index, attempt[0] if attempt else None, error)
            if not attempt or not attempt[0].established.is_set():
                self._last_refusal = error

        self._last_refusal = None
        try:
            connection = self._dial(lost)
        except Exception as error:  # noqa: BLE001 - a bad address or credentials: retried
            self._enter("failed", logging.WARNING, "member %d could not dial member %d at %s: %s",
                        me, peer, self.address, error)
            return None
        link = connection.link
        attempt.append(link)
        accepted = self._accepted(link) and not self._stopped.is_set()
        if accepted and self.membership.joined(peer, link, connection):
            self._state = "joined"
            return link
        connection.close()
        if self._stopped.is_set():
            return None
        reason = self._last_refusal or f"no answer within {self._accept_timeout_s:.1f} s"
        self._enter("refused", logging.INFO, "member %d: member %d at %s did not take the stream (%s); "
                    "retrying", me, peer, self.address, reason)
        return None

    def _accepted(self, link: FrameLink) -> bool:
        """Whether the peer accepts the stream within the accept timeout; False as soon as the
        stream ends unaccepted (a peer still stopping refuses it: dial its successor at once)."""
        deadline = time.monotonic() + self._accept_timeout_s
        while not link.established.wait(ACCEPT_POLL_S):
            if link.closed_event.is_set() or time.monotonic() >= deadline:
                return link.established.is_set()
        return True

    def _enter(self, state: str, level: int, message: str, *args: object) -> None:
        if state != self._state:
            log.log(level, message, *args)
            self._state = state
