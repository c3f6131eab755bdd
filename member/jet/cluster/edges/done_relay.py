"""DoneRelay: a distributed edge's DONE reaches the members through one relay member.

In Jet every sender of a distributed edge ends its stream with a DONE packet, so a job's edge
costs a frame on each of the k(k - 1) member pairs even when it carries no item, and that was
what grew with the member count in a short job (bench/README.md, "What grows with the member
count"). Here a sender whose last frame can carry DONE still does; one that would have sent
DONE alone instead tells its member's relay how many frames it sent. When all the member's
senders of an edge are done, the member sends one DONE_REPORT frame to the relay member (the
execution's first member) with those counts. Once the relay member has every member's report of
the edge, it sends each member one DONE_NOTICE frame: for each sender that sent no DONE, the
frames it sent. The receiver is done once it has taken that many frames, so the notice may
overtake them. An edge then costs each member two frames, and the relay member 2(k - 1),
whatever the items.

A stream's DONE matters before its whole edge is done: it takes the stream out of watermark
coalescing and barrier alignment (a member of a streaming job with no partition of its source
finishes at once while the others run on). So reports that wait for others are forwarded anyway
at the network's next flow-control round (100 ms by default). Nothing here is unpickled: the
frames are structs.
"""

from __future__ import annotations

import logging
import struct
import threading
from typing import Callable

from jet.cluster.links.packets import FrameType, PacketFormatError, frame_type
from jet.execution.backoff import wake_parked_workers
from jet.execution.tasklet import DONE, NO_PROGRESS, WAS_ALREADY_DONE

log = logging.getLogger("jet.cluster.edges.done_relay")

_HEADER = struct.Struct(">Bqiii")  # type, execution id, dest vertex id, dest ordinal, entry count
_ENTRY = struct.Struct(">iq")  # member, frames
IN_BAND = -1
"""A report's count for a sender whose last frame carried DONE: no notice is needed."""

EdgeKey = tuple[int, int]  # dest vertex id, dest ordinal


def encode_relay_frame(kind: FrameType, execution_id: int, edge: EdgeKey, counts: dict[int, int]) -> bytes:
    """A DONE_REPORT (``counts``: destination member -> frames, or IN_BAND) or a DONE_NOTICE
    (sending member -> frames) frame."""
    return _HEADER.pack(kind, execution_id, edge[0], edge[1], len(counts)) + b"".join(
        _ENTRY.pack(member, frames) for member, frames in counts.items())


def decode_relay_frame(frame: bytes) -> tuple[FrameType, int, EdgeKey, dict[int, int]]:
    """``(kind, execution id, (dest vertex id, dest ordinal), counts)`` of a relay frame."""
    kind = frame_type(frame)
    if kind not in (FrameType.DONE_REPORT, FrameType.DONE_NOTICE):
        raise PacketFormatError(f"expected a DONE_REPORT or DONE_NOTICE frame, got {kind.name}")
    try:
        _, execution_id, vertex_id, ordinal, count = _HEADER.unpack_from(frame)
    except struct.error as e:
        raise PacketFormatError(f"truncated {kind.name} frame of {len(frame)} bytes") from e
    if count < 0 or len(frame) != _HEADER.size + count * _ENTRY.size:
        raise PacketFormatError(f"{kind.name} frame of {len(frame)} bytes claims {count} entries")
    counts = dict(_ENTRY.unpack_from(frame, _HEADER.size + i * _ENTRY.size) for i in range(count))
    return kind, execution_id, (vertex_id, ordinal), counts


class DoneRelay:
    """This member's part of the relay for one execution (see the module docstring).

    ``receivers``: (dest vertex id, ordinal, sending member) -> receiver with ``relay_done(n)``;
    ``senders_per_edge``: how many senders each edge has on this member (one per other member).
    """

    def __init__(self, execution_id: int, me: int, members: list[int], send_frame: Callable[[int, bytes], None],
                 receivers: dict[tuple[int, int, int], object], senders_per_edge: dict[EdgeKey, int]) -> None:
        self.execution_id = execution_id
        self.me = me
        self.relay_member = members[0]
        self._members = list(members)
        self._send_frame = send_frame
        self._receivers = receivers
        self._senders_per_edge = senders_per_edge  # filled as the plan wires its edges
        self._lock = threading.Lock()
        self._finished: dict[EdgeKey, dict[int, int]] = {}
        """Edge -> destination member -> frames sent (or IN_BAND), of this member's senders."""
        self._reports: dict[EdgeKey, dict[int, dict[int, int]]] = {}
        """On the relay member: edge -> reporting member -> its counts, not forwarded yet."""
        self._forwarded: dict[EdgeKey, set[int]] = {}
        """On the relay member: edge -> the members whose reports are forwarded."""

    @property
    def is_relay_member(self) -> bool:
        return self.me == self.relay_member

    def all_relayed(self) -> bool:
        """On the relay member: whether every edge's notices are sent (its execution must not
        end before: the others' reports would find no relay)."""
        with self._lock:
            relayed = sum(len(members) == len(self._members) for members in self._forwarded.values())
            return relayed == len(self._senders_per_edge)

    def sender_finished(self, edge: EdgeKey, destination: int, frames: int) -> None:
        """A sender (on a tasklet thread) is done: ``frames`` sent to ``destination``, or
        IN_BAND when its last frame carried DONE. The last sender of the edge reports."""
        with self._lock:
            finished = self._finished.setdefault(edge, {})
            finished[destination] = frames
            if len(finished) < self._senders_per_edge[edge]:
                return
            counts = finished
        if self.is_relay_member:
            self.on_report(self.me, edge, counts)
        else:
            self._send_frame(self.relay_member,
                             encode_relay_frame(FrameType.DONE_REPORT, self.execution_id, edge, counts))

    def on_frame(self, peer: int, kind: FrameType, edge: EdgeKey, counts: dict[int, int]) -> None:
        """Transport thread: a report (on the relay member) or a notice from ``peer``."""
        if kind is FrameType.DONE_REPORT:
            if not self.is_relay_member:
                raise PacketFormatError(f"member {peer} sent a DONE_REPORT to member {self.me}, "
                                        f"which does not relay execution {self.execution_id}")
            self.on_report(peer, edge, counts)
        else:
            self._take_notice(edge, counts)

    def on_report(self, member: int, edge: EdgeKey, counts: dict[int, int]) -> None:
        """On the relay member: ``member``'s senders of ``edge`` are done. Once every member's
        are, each member gets what its receivers of the edge still wait for, at once; until
        then the reports wait for :meth:`flush_pending`."""
        with self._lock:
            self._reports.setdefault(edge, {})[member] = counts
            complete = len(self._reports[edge]) + len(self._forwarded.get(edge, ())) == len(self._members)
        if complete:
            self._forward(edge)

    def flush_pending(self) -> None:
        """On the relay member (the network's timer, every flow-control period): forward the
        reports still waiting for others. A stream's DONE matters before the whole edge is done:
        it takes the stream out of watermark coalescing and barrier alignment, as when a member
        of a streaming job has no partition of its source."""
        with self._lock:
            waiting = [edge for edge, reports in self._reports.items() if reports]
        for edge in waiting:
            self._forward(edge)

    def _forward(self, edge: EdgeKey) -> None:
        """Send the notices of the reports of ``edge`` not forwarded yet, one per member."""
        with self._lock:
            reports = self._reports.pop(edge, {})
            self._forwarded.setdefault(edge, set()).update(reports)
        if not reports:
            return
        wake_parked_workers()  # the completion tasklet may be waiting for this edge
        for destination in self._members:
            notice = {sender: sent[destination] for sender, sent in reports.items()
                      if sender != destination and sent.get(destination, IN_BAND) != IN_BAND}
            if not notice:
                continue
            if destination == self.me:
                self._take_notice(edge, notice)
                continue
            try:
                self._send_frame(destination, encode_relay_frame(FrameType.DONE_NOTICE, self.execution_id,
                                                                 edge, notice))
            except ConnectionError as error:  # the member is lost: the execution fails by that
                log.debug("could not send a DONE notice to member %d: %s", destination, error)

    def _take_notice(self, edge: EdgeKey, notice: dict[int, int]) -> None:
        for sender, frames in notice.items():
            receiver = self._receivers.get((edge[0], edge[1], sender))
            if receiver is None:
                raise PacketFormatError(f"a DONE notice of execution {self.execution_id} names a receiver "
                                        f"of edge {edge} from member {sender} that member {self.me} lacks")
            receiver.relay_done(frames)


class RelayCompletionTasklet:
    """On the relay member: done once every edge's notices are sent, so that its execution,
    whose own receivers may all have had their DONE in band, outlives the others' reports."""

    is_cooperative = True

    def __init__(self, relay: DoneRelay) -> None:
        self.name = f"done-relay(execution {relay.execution_id})"
        self._relay = relay
        self._done = False

    def init(self) -> None:
        pass

    def wants_polling(self) -> bool:
        """Never polled: the last report wakes its thread."""
        return False

    def call(self) -> int:
        if self._done:
            return WAS_ALREADY_DONE
        if self._relay.all_relayed():
            self._done = True
            return DONE
        return NO_PROGRESS

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"RelayCompletionTasklet({self.name!r})"
