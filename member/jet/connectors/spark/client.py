"""The Spark side's connection to a member: a peer stream with a negative index, requests and
replies, and the writer's flow-control limit.

Used by Spark tasks (writer and reader) and by the Spark driver (probe, commit, abort, sample).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from typing import Any

from jet.cluster.edges.flow_control import SendLimit
from jet.cluster.links.auth import TlsConfig
from jet.cluster.links.packets import FrameType
from jet.cluster.links.transport import PeerConnection
from jet.connectors.spark import protocol as p
from jet.connectors.spark.options import JetOptions

REQUEST_TIMEOUT_S = 30.0


class JetSparkError(RuntimeError):
    """The job refused or failed a Spark request (the message says why), or a member is unreachable."""


class VertexEndedError(JetSparkError):
    """The job's Spark vertex has ended everywhere: the job failed, was cancelled or finished."""


class MemberLink:
    """One Spark task's or driver's stream to one member."""

    def __init__(self, address: str, member: int, token: str, tls: TlsConfig | None = None) -> None:
        self.address = address
        self.member = member
        self._token = token
        self._tls = tls
        self.peer_index = p.new_peer_index()
        self.send_limit = SendLimit()
        self._limit_changed = threading.Condition()
        self._replies: dict[Any, queue.SimpleQueue] = {}
        self.chunks: queue.SimpleQueue = queue.SimpleQueue()
        self.error: str | None = None
        self._rids = itertools.count(1)
        self._lost: BaseException | None = None
        self._connection = PeerConnection(address, self.peer_index, member, token, tls,
                                          on_frame=self._on_frame, on_connection_lost=self._on_lost)

    # -- incoming (the connection's reader thread) ---------------------------------------------------
    def _on_frame(self, _peer: int, frame: bytes) -> None:
        header, offset = p.decode_header(frame)
        op = header["op"]
        if op == p.ACK:
            with self._limit_changed:
                self.send_limit.on_ack(int(header["limit"]))
                self._limit_changed.notify_all()
        elif op == p.CHUNK:
            self.chunks.put((header, p.decode_items(header, frame, offset)))
        else:
            if op == p.ERROR and header.get("rid") is None:
                self._fail(str(header.get("message")))
            target = self._replies.get(header.get("rid"))
            if target is not None:
                target.put((header, frame, offset))

    def _on_lost(self, _peer: int, error: BaseException) -> None:
        self._lost = error
        self._fail(f"lost the connection to member {self.member} at {self.address}: {error}")

    def _fail(self, message: str) -> None:
        with self._limit_changed:
            if self.error is None:
                self.error = message
            self._limit_changed.notify_all()
        self.chunks.put(({"op": p.ERROR, "message": message}, None))
        for target in list(self._replies.values()):
            target.put(({"op": p.ERROR, "message": message}, b"", 0))

    @property
    def is_dead(self) -> bool:
        """Whether the stream broke (the member went away or refused a request it could not
        handle yet); a dead link stays dead: dial a new one."""
        return self._lost is not None

    def reopened(self) -> "MemberLink":
        """A new link to the same member (close this one first)."""
        return MemberLink(self.address, self.member, self._token, self._tls)

    def check(self) -> None:
        """Raise :class:`JetSparkError` if the member reported an error or the stream broke."""
        if self.error is not None:
            raise JetSparkError(self.error)

    # -- outgoing ------------------------------------------------------------------------------------
    def send(self, header: dict, payload: Any = None) -> int:
        """Send one request frame (an Arrow frame's payload is IPC bytes, see
        :func:`~jet.connectors.spark.protocol.encode_sized`); returns the payload's size in bytes."""
        self.check()
        frame, payload_bytes = p.encode_sized(FrameType.SPARK_REQUEST, header, payload)
        try:
            self._connection.send(frame)
        except ConnectionError as error:
            raise JetSparkError(f"member {self.member} at {self.address}: {error}") from error
        return payload_bytes

    def request(self, header: dict, payload: Any = None, timeout_s: float = REQUEST_TIMEOUT_S
                ) -> tuple[dict, Any]:
        """Send a request and wait for its reply; :class:`JetSparkError` on an error reply."""
        rid = next(self._rids)
        replies: queue.SimpleQueue = queue.SimpleQueue()
        self._replies[rid] = replies
        try:
            self.send({**header, "rid": rid}, payload)
            try:
                reply, frame, offset = replies.get(timeout=timeout_s)
            except queue.Empty:
                raise JetSparkError(f"member {self.member} at {self.address} did not answer "
                                    f"{header['op']!r} within {timeout_s} s") from None
        finally:
            self._replies.pop(rid, None)
        if reply["op"] == p.ERROR:
            raise JetSparkError(str(reply.get("message")))
        return reply, p.decode_items(reply, frame, offset) if frame else None

    def wait_to_send(self, sent_seq_bytes: int, timeout_s: float, what: str) -> None:
        """Block while the member's flow-control limit does not allow more data."""
        deadline = time.monotonic() + timeout_s
        with self._limit_changed:
            while not self.send_limit.may_send(sent_seq_bytes):
                self.check()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise JetSparkError(
                        f"{what}: member {self.member} at {self.address} accepted no more rows for "
                        f"{timeout_s} s (the job is stalled; raise option 'send_timeout' if it is just slow)")
                self._limit_changed.wait(min(remaining, 1.0))
        self.check()

    def close(self) -> None:
        self._connection.close()


def connect_all(options: JetOptions) -> list[MemberLink]:
    """A link to every member named by the options (index = position in ``members``)."""
    return [MemberLink(address, index, options.token, options.tls()) for index, address in enumerate(options.members)]


def close_all(links: list[MemberLink]) -> None:
    for link in links:
        link.close()


def _alive(links: list[MemberLink], position: int) -> MemberLink:
    """The link at ``position``, replaced by a new one to the same member if its stream broke."""
    link = links[position]
    if link.is_dead:
        link.close()
        link = links[position] = link.reopened()
    return link


def wait_for_vertex(options: JetOptions, kind: str | tuple[str, ...]) -> dict[int, int]:
    """Wait (up to ``ready_timeout``) until every processor of the job's Spark ``kind`` vertex
    (one of ``kind`` when a tuple) runs; return {processor global index: member index}. A
    clear error names what is missing.

    A member that is not ready for Spark yet (it has not loaded the job, or broke the stream of
    a request it could not handle yet) is asked again, on a new link when the old one is dead."""
    kinds = (kind,) if isinstance(kind, str) else kind
    kind = " or ".join(kinds)
    deadline = time.monotonic() + options.ready_timeout_s
    links = connect_all(options)
    delay, last = 0.05, "no member answered"
    try:
        while True:
            owners: dict[int, int] = {}
            total, seen, answered = None, [], True
            for position in range(len(links)):
                link = _alive(links, position)
                try:
                    reply, _ = link.request({"op": p.PROBE, "job": options.job, "vertex": options.vertex},
                                            timeout_s=max(1.0, min(10.0, deadline - time.monotonic())))
                except JetSparkError as error:  # asked again next round (every member is asked each round)
                    last, answered = str(error), False
                    continue
                if reply.get("ended") and not reply.get("processors"):
                    raise VertexEndedError(reply["ended"])
                if reply.get("kind") not in (None, *kinds):
                    raise JetSparkError(f"vertex {options.vertex!r} of job {options.job!r} is a Spark "
                                        f"{reply['kind']}, not a Spark {kind}")
                seen.append(f"member {link.member}: {reply.get('vertices')}")
                for index in reply.get("processors", []):
                    owners[int(index)] = link.member
                total = reply.get("total") or total
            if answered:
                if total and len(owners) == total:
                    return owners
                last = (f"{len(owners)} of {total or '?'} processors of {options.vertex!r} are running; "
                        f"Spark vertices of job {options.job!r} per member: {'; '.join(seen)}")
            if time.monotonic() >= deadline:
                raise JetSparkError(f"job {options.job!r} has no running Spark {kind} vertex "
                                    f"{options.vertex!r} after {options.ready_timeout_s} s: {last}")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    finally:
        close_all(links)


def tell_members(options: JetOptions, header: dict, members: set[int] | None = None,
                 timeout_s: float = REQUEST_TIMEOUT_S) -> list[str]:
    """Send a commit or abort to the vertex on ``members`` (default: all) and wait for each to
    confirm (``timeout_s`` each); return the errors of members that refused (a commit raises
    on the first)."""
    links = [link for link in connect_all(options) if members is None or link.member in members]
    errors = []
    try:
        for link in links:
            try:
                link.request({**header, "job": options.job, "vertex": options.vertex}, timeout_s=timeout_s)
            except JetSparkError as error:
                if header["op"] == p.COMMIT:
                    raise
                errors.append(str(error))
    finally:
        close_all(links)
    return errors
