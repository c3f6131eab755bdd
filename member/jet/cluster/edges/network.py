"""MemberNetwork: routes this member's frames to receivers and senders, and sends the acks.

Data frames are routed by (execution id, destination vertex id, ordinal, sending member) to a
ReceiverTasklet; ack frames update the SendLimit of the matching SenderTasklets. A timer
thread, separate from the tasklet threads, sends every ``flow_control_period_ms`` one ack frame
to each member that sends to us, with an absolute limit per receiver (Jet's protocol) whose
sender can use it (see :meth:`MemberNetwork.send_acks`); the same round forwards the DONE
reports that wait on the relay member (:mod:`jet.cluster.edges.done_relay`). Frames of an execution
not registered here yet are held until it is (:mod:`jet.cluster.edges.early_frames`).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from jet.cluster.edges.chunk_packets import decode_chunk_header
from jet.cluster.edges.done_relay import DoneRelay, decode_relay_frame
from jet.cluster.edges.early_frames import EarlyFrames
from jet.cluster.links.packets import (
    AckEntry,
    FrameType,
    PacketFormatError,
    decode_ack_packet,
    encode_ack_packet,
    frame_type,
)
from jet.execution.backoff import wake_parked_workers

log = logging.getLogger("jet.cluster.edges.network")

ReceiverKey = tuple[int, int, int, int]  # execution id, vertex id, ordinal, sending member

#: A receiver's limit is acked in its first rounds even when unchanged (1 s at the default period).
ACK_ROUNDS_ALWAYS = 10
#: Every this many rounds every receiver's limit is acked, changed or not (2 s at the default period).
ACK_REFRESH_ROUNDS = 20
FrameHandler = Callable[[int, bytes], None]
"""``handler(peer, frame)`` for a frame type the network itself does not know."""

_DEFAULT_FRAME_HANDLERS: dict[int, Callable[["MemberNetwork"], FrameHandler]] = {}


def register_default_frame_handler(kind: FrameType,
                                   factory: Callable[["MemberNetwork"], FrameHandler]) -> None:
    """Give every MemberNetwork of this process a handler for ``kind``, made by
    ``factory(network)`` when the first such frame arrives (connectors such as Spark plug in
    here, so this module knows nothing about them)."""
    _DEFAULT_FRAME_HANDLERS[int(kind)] = factory
SenderKey = tuple[int, int, int, int]  # execution id, vertex id, ordinal, destination member


class MemberNetwork:
    """The data plane of one member."""

    def __init__(self, member_index: int, send_frame: Callable[[int, bytes], None],
                 flow_control_period_ms: int = 100,
                 clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.member_index = member_index
        self._send_frame = send_frame
        self._period_s = flow_control_period_ms / 1000
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._receivers: dict[ReceiverKey, object] = {}
        self._senders: dict[SenderKey, object] = {}
        self._failure_handlers: dict[int, Callable[[int, BaseException], None]] = {}
        self._members_of: dict[int, set[int]] = {}
        self._relays: dict[int, DoneRelay] = {}
        self._early = EarlyFrames()
        self._frame_handlers: dict[int, FrameHandler] = {}
        self._stop = threading.Event()
        self._needed = threading.Event()
        """Set while the flow-control round has something to do: an execution registered here, or
        frames held (cleared by the timer when it finds nothing, so an idle member's timer sleeps)."""
        self._timer = threading.Thread(target=self._ack_loop, name="jet.flow-control", daemon=True)
        self._dropped = 0
        self._ack_round = 0
        self._acked: dict[ReceiverKey, tuple[int, int]] = {}
        """Receiver -> (the limit of its last round, how many rounds it has been acked)."""

    @property
    def dropped_frames(self) -> int:
        """Data and relay frames dropped: of an execution that ended here, for no receiver, or
        held too long for an execution never registered here."""
        return self._dropped + self._early.dropped

    @property
    def held_frames(self) -> int:
        """Frames held for executions not registered here yet."""
        return self._early.held_frames

    def send_frame(self, peer: int, frame: bytes) -> None:
        """Send one frame to member ``peer`` (raises ConnectionError when the link is gone)."""
        self._send_frame(peer, frame)

    @property
    def flow_control_period_s(self) -> float:
        """Seconds between two rounds of flow-control acks."""
        return self._period_s

    def wait_stopped(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for :meth:`stop`; True once stopped (for plug-in timers)."""
        return self._stop.wait(timeout_s)

    def register_frame_handler(self, kind: FrameType, handler: FrameHandler) -> None:
        """Route frames of ``kind`` to ``handler(peer, frame)`` (on the transport thread)."""
        self._frame_handlers[int(kind)] = handler

    def start(self) -> "MemberNetwork":
        self._timer.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._needed.set()

    # -- executions ---------------------------------------------------------------------------
    def register(self, execution_id: int, receivers: dict[ReceiverKey, object],
                 senders: dict[SenderKey, object], peers: set[int],
                 on_failure: Callable[[int, BaseException], None], relay: DoneRelay | None = None) -> None:
        """Route frames of an execution; ``on_failure(peer, error)`` when a peer is lost; its
        DONE reports and notices to ``relay`` (the plan's ``done_relay``). Frames that came
        before are handed over first, in their order."""
        with self._lock:
            # Handed over before the routes are published: a transport thread that finds a route
            # must not overtake the frames held from its peer (one that finds none takes the lock).
            for peer, frame in self._early.take(execution_id):
                try:
                    self._deliver(peer, frame, receivers, relay)
                except PacketFormatError as e:  # on its stream it would have closed the stream
                    self._dropped += 1
                    log.warning("dropped a frame member %d sent before execution %d registered here: %s",
                                peer, execution_id, e)
            self._receivers.update(receivers)
            self._senders.update(senders)
            if relay is not None:
                self._relays[execution_id] = relay
            self._failure_handlers[execution_id] = on_failure
            self._members_of[execution_id] = set(peers)
        self._needed.set()

    def unregister(self, execution_id: int) -> None:
        """Stop routing an execution's frames (those still to come are dropped)."""
        with self._lock:
            self._early.ended(execution_id)
            self._receivers = {k: v for k, v in self._receivers.items() if k[0] != execution_id}
            self._senders = {k: v for k, v in self._senders.items() if k[0] != execution_id}
            self._failure_handlers.pop(execution_id, None)
            self._members_of.pop(execution_id, None)
            self._relays.pop(execution_id, None)

    def discard(self, execution_id: int) -> None:
        """An execution that will not run here (its ``init`` failed, or it was cancelled before
        its ``init`` registered it): its frames are dropped, and :meth:`has_ended` says so."""
        with self._lock:
            self._early.ended(execution_id)

    def has_ended(self, execution_id: int) -> bool:
        """Whether ``execution_id`` was unregistered or discarded here (recently)."""
        with self._lock:
            return self._early.has_ended(execution_id)

    # -- incoming ---------------------------------------------------------------------------
    def on_frame(self, peer: int, frame: bytes) -> None:
        """Transport thread: one frame from an authenticated peer."""
        kind = frame_type(frame)
        if kind is FrameType.CHUNK:
            header = decode_chunk_header(frame)
            receiver = self._receivers.get((header.execution_id, header.dest_vertex_id,
                                            header.dest_ordinal, peer))
            if receiver is None:
                self._route_late(header.execution_id, peer, frame)
                return
            receiver.enqueue(frame)
        elif kind is FrameType.ACK:
            senders = self._senders
            for execution_id, entries in decode_ack_packet(frame).items():
                for entry in entries:
                    sender = senders.get((execution_id, entry.dest_vertex_id, entry.dest_ordinal, peer))
                    if sender is not None:
                        sender.send_limit.on_ack(entry.send_seq_limit_compressed)
            wake_parked_workers()
        elif kind is FrameType.DONE_REPORT or kind is FrameType.DONE_NOTICE:
            kind, execution_id, edge, counts = decode_relay_frame(frame)
            relay = self._relays.get(execution_id)
            if relay is None:
                self._route_late(execution_id, peer, frame)
                return
            relay.on_frame(peer, kind, edge, counts)
        else:
            handler = self._frame_handlers.get(kind)
            if handler is None and kind in _DEFAULT_FRAME_HANDLERS:
                handler = self._frame_handlers.setdefault(kind, _DEFAULT_FRAME_HANDLERS[kind](self))
            if handler is None:
                raise PacketFormatError(f"member {peer} sent a {kind.name} frame on the data stream")
            handler(peer, frame)

    def _route_late(self, execution_id: int, peer: int, frame: bytes) -> None:
        """A data or relay frame that found no route: delivered if its execution registered
        meanwhile (routes are published under the lock), held if it has not registered yet,
        else dropped."""
        with self._lock:
            if execution_id in self._members_of:
                self._deliver(peer, frame, self._receivers, self._relays.get(execution_id))
            elif self._early.hold(execution_id, peer, frame):
                self._needed.set()  # to expire it
            else:
                self._dropped += 1
                log.debug("dropped a %s frame from member %d for execution %d, which ended here",
                          frame_type(frame).name, peer, execution_id)

    def _deliver(self, peer: int, frame: bytes, receivers: dict[ReceiverKey, object],
                 relay: DoneRelay | None) -> None:
        """A data or relay frame of a registered (or registering) execution to its receiver or relay."""
        if frame_type(frame) is FrameType.CHUNK:
            header = decode_chunk_header(frame)
            receiver = receivers.get((header.execution_id, header.dest_vertex_id, header.dest_ordinal, peer))
            if receiver is None:
                self._dropped += 1
                log.debug("dropped a frame from member %d for an unknown receiver %s", peer, header)
                return
            receiver.enqueue(frame)
            return
        kind, execution_id, edge, counts = decode_relay_frame(frame)
        if relay is None:
            self._dropped += 1
            log.debug("dropped a %s frame from member %d: execution %d has no DONE relay here", kind.name, peer,
                      execution_id)
            return
        relay.on_frame(peer, kind, edge, counts)

    def on_connection_lost(self, peer: int, error: BaseException) -> None:
        """Fail every execution that has ``peer`` as a participant."""
        with self._lock:
            handlers = [h for e, h in self._failure_handlers.items() if peer in self._members_of[e]]
        for handler in handlers:
            handler(peer, error)

    # -- flow control -----------------------------------------------------------------------
    def send_acks(self) -> None:
        """One ack frame per sending member with the current limit of each of its receivers whose
        sender can use it.

        Every receiver's window is updated each round, but an ack is sent only where a sender
        can use it (the stream is ordered and reliable, and a limit is absolute):

        - not before the sender's first frame arrived: until then it has sent less than the
          64 KiB it may send unacked, or its frames are on their way and the next round acks them;
        - not after its DONE arrived: it sends nothing more;
        - in between, when the limit changed, in the first :data:`ACK_ROUNDS_ALWAYS` rounds and
          every :data:`ACK_REFRESH_ROUNDS`-th round.

        So an idle job sends no acks, and a short job's k(k - 1) streams carry its data and DONE
        and no ack at all."""
        now = self._clock_ns()
        self._ack_round += 1
        refresh = self._ack_round % ACK_REFRESH_ROUNDS == 0
        sent_before, sent_now = self._acked, {}
        per_member: dict[int, dict[int, list[AckEntry]]] = {}
        for key, receiver in list(self._receivers.items()):
            limit = receiver.window.update_and_get_send_seq_limit_compressed(
                now, receiver.is_buffer_empty())
            if receiver.sender_done or not receiver.bytes_received:
                continue
            execution_id, vertex_id, ordinal, peer = key
            last_limit, rounds = sent_before.get(key, (None, 0))
            sent_now[key] = (limit, rounds + 1)
            if limit == last_limit and rounds >= ACK_ROUNDS_ALWAYS and not refresh:
                continue
            per_member.setdefault(peer, {}).setdefault(execution_id, []).append(
                AckEntry(vertex_id, ordinal, limit))
        self._acked = sent_now
        for peer, acks in per_member.items():
            try:
                self._send_frame(peer, encode_ack_packet(acks))
            except ConnectionError as error:
                log.debug("could not send acks to member %d: %s", peer, error)

    def _ack_loop(self) -> None:
        while not self._stop.wait(self._period_s):
            with self._lock:
                if not (self._members_of or self._early.held_frames):
                    self._needed.clear()  # under the lock: a registration sets it after this
            self._needed.wait()
            try:
                self.send_acks()
                with self._lock:
                    self._early.expire()
                for relay in list(self._relays.values()):
                    relay.flush_pending()
            except Exception:  # noqa: BLE001 - the timer must survive one bad round
                log.exception("a flow-control round (acks, waiting DONE reports) failed")
