"""Inbound edge streams: one input ordinal of one processor, read from its conveyor."""

from __future__ import annotations

from typing import Sequence

from jet.core.inbox import Inbox
from jet.core.special_items import MAX_TIMESTAMP, Watermark
from jet.execution.queues import DONE_ITEM, SpecialItem, SpscQueue
from jet.execution.tasklet import DONE, MADE_PROGRESS, NO_PROGRESS, WAS_ALREADY_DONE
from jet.execution.watermark_coalescer import create_coalescer


class InboundEdgeStream:
    """Drains the queues of one conveyor (one per upstream processor or sending member).

    Each queue is drained up to its first special item. DONE drops the queue; the stream is
    done when no queue is left. A watermark is coalesced with the other queues' (the minimum
    over the queues that are not idle: :mod:`jet.execution.watermark_coalescer`); when that
    yields a watermark to forward, the drain stops right there and leaves it in
    ``pending_watermark``, so a watermark always comes after every item drained with it.
    """

    __slots__ = ("ordinal", "priority", "_queues", "name", "pending_watermark", "_coalescer",
                 "_queue_index", "_idle")

    def __init__(self, ordinal: int, priority: int, queues: Sequence[SpscQueue],
                 name: str = "") -> None:
        self.ordinal = ordinal
        self.priority = priority
        self._queues = list(queues)
        self.name = name
        self.pending_watermark: Watermark | None = None
        """A coalesced watermark (or IDLE_MESSAGE) the reader takes (and clears) after the
        items of the drain that set it."""
        self._coalescer = create_coalescer(
            len(self._queues), [f"queue {q.name or i} of {name or 'an edge'}"
                                for i, q in enumerate(self._queues)])
        self._queue_index = {q: i for i, q in enumerate(self._queues)}
        self._idle: set[SpscQueue] = set()
        """The queues whose last special item was IDLE (usually none)."""

    def drain_to(self, inbox: Inbox) -> int:
        """Move everything available into ``inbox``; return a ProgressState value.

        Returns early when a watermark becomes due, after setting ``pending_watermark``."""
        queues = self._queues
        if not queues:
            return WAS_ALREADY_DONE
        progress = False
        add = inbox.add_chunk
        idle = self._idle
        for queue in queues:
            poll = queue.poll
            was_idle = idle and queue in idle
            while True:
                entry = poll()
                if entry is None:
                    break
                progress = True
                if type(entry) is list:
                    add(entry)
                    if was_idle:
                        was_idle = False
                        idle.discard(queue)
                        self._coalescer.observe_event(self._queue_index[queue])
                    continue
                result = self._on_special(queue, entry)
                if result is not None:
                    return result
                break
        if not self._queues:
            return DONE
        if self._coalescer.idle_message_pending:
            self.pending_watermark = self._coalescer.check_wm_history()
            return MADE_PROGRESS
        return MADE_PROGRESS if progress else NO_PROGRESS

    def _on_special(self, queue: SpscQueue, item: SpecialItem) -> int | None:
        """Handle DONE or a watermark from ``queue``; a ProgressState when the drain must stop."""
        index = self._queue_index[queue]
        if item is DONE_ITEM:
            self._queues = [q for q in self._queues if q is not queue]
            self._idle.discard(queue)
            watermark = self._coalescer.queue_done(index)
        elif type(item) is Watermark:
            if item.timestamp == MAX_TIMESTAMP:
                self._idle.add(queue)
            else:
                self._idle.discard(queue)
            watermark = self._coalescer.observe_wm(index, item)
        else:
            raise AssertionError(f"unexpected special item {item!r} on {queue!r}")
        if watermark is None:
            return None
        self.pending_watermark = watermark
        return MADE_PROGRESS if self._queues else DONE

    def is_done(self) -> bool:
        return not self._queues

    def __repr__(self) -> str:
        return f"InboundEdgeStream(ordinal={self.ordinal}, priority={self.priority}, live={len(self._queues)})"
