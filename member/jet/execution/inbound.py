"""Inbound edge streams: one input ordinal of one processor, read from its conveyor."""

from __future__ import annotations

from typing import Sequence

from jet.core.inbox import Inbox
from jet.execution.queues import DONE_ITEM, SpscQueue
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS, WAS_ALREADY_DONE


class InboundEdgeStream:
    """Drains the queues of one conveyor (one per upstream processor or sending member).

    Each queue is drained up to its first special item. DONE drops the queue; the stream is
    done when no queue is left. Watermarks and snapshot barriers will be handled at the same
    point, per queue, without touching the data path.
    """

    __slots__ = ("ordinal", "priority", "_queues", "name")

    def __init__(self, ordinal: int, priority: int, queues: Sequence[SpscQueue],
                 name: str = "") -> None:
        self.ordinal = ordinal
        self.priority = priority
        self._queues = list(queues)
        self.name = name

    def drain_to(self, inbox: Inbox) -> int:
        """Move everything available into ``inbox``; return a ProgressState value."""
        queues = self._queues
        if not queues:
            return WAS_ALREADY_DONE
        progress = False
        finished = None
        add = inbox.add_chunk
        for queue in queues:
            poll = queue.poll
            while True:
                entry = poll()
                if entry is None:
                    break
                progress = True
                if type(entry) is list:
                    add(entry)
                elif entry is DONE_ITEM:
                    finished = [queue] if finished is None else finished + [queue]
                    break
                else:
                    raise AssertionError(f"unexpected special item {entry!r} on {queue!r}")
        if finished is not None:
            self._queues = queues = [q for q in queues if q not in finished]
            if not queues:
                return DONE
        return MADE_PROGRESS if progress else NO_PROGRESS

    def is_done(self) -> bool:
        return not self._queues

    def __repr__(self) -> str:
        return f"InboundEdgeStream(ordinal={self.ordinal}, priority={self.priority}, live={len(self._queues)})"
