"""Frames that arrive for an execution this member has not initialised yet, held until it has.

A member starts its part of an execution as soon as its own ``init`` is done (there is no
separate ``start`` round), so a quicker member's senders may reach this member before its
``init`` has registered the receivers. Such frames are held here, in arrival order, and handed
over when the execution registers (:meth:`MemberNetwork.register`). They are bounded: by the
senders' initial flow-control window (a sender sends no more until a receiver acks), by
:data:`HOLD_S` (an execution whose ``init`` never comes here is failed by the coordinator long
before) and by :data:`MAX_HELD_BYTES` in all. Frames of an execution that ended here, or whose
``init`` failed here, are dropped, as before.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Callable

log = logging.getLogger("jet.cluster.edges.early_frames")

HOLD_S = 120.0
"""How long frames of an execution never initialised here are kept (the coordinator's default
``init_timeout_ms`` is far shorter)."""
MAX_HELD_BYTES = 64 << 20
"""All held frames together; beyond it frames are dropped with a warning."""
ENDED_REMEMBERED = 4096
"""How many ended executions' ids are remembered, so their late frames are dropped, not held."""


class EarlyFrames:
    """Held frames per execution id; not thread-safe (the network calls it under its lock)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._held: dict[int, list[tuple[int, bytes]]] = {}
        self._since: dict[int, float] = {}
        self._ended: OrderedDict[int, None] = OrderedDict()
        self.held_bytes = 0
        self.held_frames = 0
        self.dropped = 0

    def hold(self, execution_id: int, peer: int, frame: bytes) -> bool:
        """Keep ``frame`` from ``peer`` until ``execution_id`` registers; False (not kept) when
        that execution ended here or the bound is reached."""
        if execution_id in self._ended:
            return False
        if self.held_bytes + len(frame) > MAX_HELD_BYTES:
            self.dropped += 1
            log.warning("dropped a frame from member %d for execution %d, not initialised here: %d bytes of "
                        "such frames are held already", peer, execution_id, self.held_bytes)
            return False
        self._held.setdefault(execution_id, []).append((peer, frame))
        self._since.setdefault(execution_id, self._clock())
        self.held_bytes += len(frame)
        self.held_frames += 1
        return True

    def take(self, execution_id: int) -> list[tuple[int, bytes]]:
        """The frames held for ``execution_id``, in arrival order (now registering)."""
        frames = self._held.pop(execution_id, [])
        self._since.pop(execution_id, None)
        self.held_bytes -= sum(len(frame) for _, frame in frames)
        self.held_frames -= len(frames)
        return frames

    def ended(self, execution_id: int) -> None:
        """``execution_id`` is over here (or never will run here): its frames are dropped from now."""
        self.dropped += len(self.take(execution_id))
        self._ended[execution_id] = None
        while len(self._ended) > ENDED_REMEMBERED:
            self._ended.popitem(last=False)

    def has_ended(self, execution_id: int) -> bool:
        """Whether ``execution_id`` ended here, or was given up on before it ran (among the last
        :data:`ENDED_REMEMBERED`)."""
        return execution_id in self._ended

    def expire(self) -> None:
        """Drop what was held longer than :data:`HOLD_S`."""
        deadline = self._clock() - HOLD_S
        for execution_id in [e for e, since in self._since.items() if since < deadline]:
            frames = self.take(execution_id)
            self.dropped += len(frames)
            log.info("dropped %d frames of execution %d: it was not initialised on this member within %.0f s",
                     len(frames), execution_id, HOLD_S)
