"""Inbound edge streams: one input ordinal of one processor, read from its conveyor."""

from __future__ import annotations

from typing import Sequence

from jet.core.inbox import Inbox
from jet.core.special_items import MAX_TIMESTAMP, SnapshotBarrier, Watermark
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

    A snapshot barrier is forwarded (in ``pending_barrier``, the drain stopping there) once
    every live queue delivered it. With ``wait_for_all_barriers`` (exactly-once, and from a
    terminal barrier on) a queue that delivered it is not drained until then; otherwise it is,
    and items after the barrier may be processed before the snapshot (at-least-once).
    """

    __slots__ = ("ordinal", "priority", "queues", "_queues", "name", "pending_watermark", "_coalescer",
                 "_queue_index", "_idle", "pending_barrier", "wait_for_all_barriers",
                 "_barrier_queues", "_blocked", "_barrier")

    def __init__(self, ordinal: int, priority: int, queues: Sequence[SpscQueue],
                 name: str = "", wait_for_all_barriers: bool = False) -> None:
        self.ordinal = ordinal
        self.priority = priority
        self.queues = tuple(queues)
        """Every queue of the conveyor, finished ones included (metrics read their sizes)."""
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
        self.pending_barrier: SnapshotBarrier | None = None
        """A barrier every live queue delivered, for the reader to take (and clear)."""
        self.wait_for_all_barriers = wait_for_all_barriers
        self._barrier_queues: set[SpscQueue] = set()
        """The queues that delivered the barrier being aligned."""
        self._blocked: set[SpscQueue] = set()
        """Queues not drained until the barrier is aligned (exactly-once)."""
        self._barrier: SnapshotBarrier | None = None

    def drain_to(self, inbox: Inbox) -> int:
        """Move everything available into ``inbox``; return a ProgressState value.

        Returns early when a watermark becomes due, after setting ``pending_watermark``."""
        queues = self._queues
        if not queues:
            return WAS_ALREADY_DONE
        progress = False
        add = inbox.add_chunk
        idle = self._idle
        blocked = self._blocked
        for queue in queues:
            if blocked and queue in blocked:
                continue
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

    def may_have_input(self) -> bool:
        """Whether :meth:`drain_to` could move anything now: an entry in a live queue, or a
        coalesced idle message due. A cheap test for readers that are mostly idle."""
        if self._coalescer.idle_message_pending:
            return True
        for queue in self._queues:
            if not queue.is_empty():
                return True
        return False

    def _on_special(self, queue: SpscQueue, item: SpecialItem) -> int | None:
        """Handle DONE or a watermark from ``queue``; a ProgressState when the drain must stop."""
        index = self._queue_index[queue]
        if item is DONE_ITEM:
            self._queues = [q for q in self._queues if q is not queue]
            self._idle.discard(queue)
            watermark = self._coalescer.queue_done(index)
            if self._barrier_queues:
                self._barrier_queues.discard(queue)
                self._blocked.discard(queue)
                self._check_barrier_aligned()
        elif type(item) is SnapshotBarrier:
            return self._on_barrier(queue, item)
        elif type(item) is Watermark:
            if item.timestamp == MAX_TIMESTAMP:
                self._idle.add(queue)
            else:
                self._idle.discard(queue)
            watermark = self._coalescer.observe_wm(index, item)
        else:
            raise AssertionError(f"unexpected special item {item!r} on {queue!r}")
        if watermark is None:
            if self.pending_barrier is not None:
                return MADE_PROGRESS if self._queues else DONE
            return None
        self.pending_watermark = watermark
        return MADE_PROGRESS if self._queues else DONE

    def _on_barrier(self, queue: SpscQueue, barrier: SnapshotBarrier) -> int | None:
        current = self._barrier
        if current is not None and current.snapshot_id != barrier.snapshot_id:
            if barrier.snapshot_id < current.snapshot_id:
                return None  # a snapshot a newer one superseded: this queue goes on to the newer barrier
            self._barrier_queues.clear()  # the older snapshot was abandoned (SnapshotContext.start_phase1)
            self._blocked.clear()
        self._barrier = barrier
        self._barrier_queues.add(queue)
        if barrier.is_terminal:
            self.wait_for_all_barriers = True  # DONE follows a terminal barrier: never read past it
        if self.wait_for_all_barriers:
            self._blocked.add(queue)
        if self._check_barrier_aligned():
            return MADE_PROGRESS
        return None

    def _check_barrier_aligned(self) -> bool:
        """Forward the barrier once every live queue delivered it."""
        if self._barrier is None or len(self._barrier_queues) < len(self._queues):
            return False
        self.pending_barrier = self._barrier
        self._barrier = None
        self._barrier_queues.clear()
        self._blocked.clear()
        return True

    def is_done(self) -> bool:
        return not self._queues

    def __repr__(self) -> str:
        return f"InboundEdgeStream(ordinal={self.ordinal}, priority={self.priority}, live={len(self._queues)})"
