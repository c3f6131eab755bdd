"""ProcessorTasklet: drives one processor through its lifecycle, one small step per call."""

from __future__ import annotations

import enum
from collections import deque
from typing import Sequence

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.execution.inbound import InboundEdgeStream
from jet.execution.outbound import OutboundCollector
from jet.execution.queues import DONE_ITEM
from jet.execution.tasklet import DONE, DONE_BIT, MADE_PROGRESS, NO_PROGRESS, PROGRESS_BIT, WAS_ALREADY_DONE


class ProcessorState(enum.Enum):
    """Where a ProcessorTasklet is in the life of its processor."""

    PROCESS_INBOX = "process_inbox"
    """Refill the inbox from the current priority group when empty; let the processor process it."""
    COMPLETE_EDGE = "complete_edge"
    """An input ordinal is exhausted: call complete_edge(ordinal) until it returns True."""
    COMPLETE = "complete"
    """Every input is exhausted (or there is none): call complete() until it returns True."""
    EMIT_DONE_ITEM = "emit_done_item"
    """Hand the last output downstream, then DONE to every outbound collector."""
    END = "end"
    """Finished; the tasklet reports done."""


_PROCESS_INBOX = ProcessorState.PROCESS_INBOX
_COMPLETE_EDGE = ProcessorState.COMPLETE_EDGE
_COMPLETE = ProcessorState.COMPLETE
_EMIT_DONE_ITEM = ProcessorState.EMIT_DONE_ITEM
_END = ProcessorState.END


class ProcessorTasklet:
    """Moves items from inbound queues through the processor into outbound collectors.

    Each call first hands the outbox's buckets to the collectors. If a bucket cannot be handed
    over (its downstream queues are full) the processor is not called at all: the tasklet
    yields, and the backpressure reaches the processor as a full outbox. Otherwise it runs
    one step of the state machine. Inputs are read by ascending priority: a group of edges is
    not read at all until every edge of the group before it is done.
    """

    def __init__(self, name: str, processor: Processor, context: Context,
                 instreams: Sequence[InboundEdgeStream],
                 collectors: Sequence[OutboundCollector],
                 outbox_capacities: Sequence[int]) -> None:
        self.name = name
        self.processor = processor
        self.context = context
        self.is_cooperative = bool(getattr(processor, "is_cooperative", True))
        self.inbox = Inbox()
        self.outbox = Outbox(len(collectors), list(outbox_capacities))
        self._collectors = list(collectors)
        by_priority: dict[int, list[InboundEdgeStream]] = {}
        for stream in sorted(instreams, key=lambda s: (s.priority, s.ordinal)):
            by_priority.setdefault(stream.priority, []).append(stream)
        self._groups = deque(by_priority.values())
        self._group: list[InboundEdgeStream] = self._groups.popleft() if self._groups else []
        self._cursor = 0
        self._active_ordinals = len(instreams)
        self._current: InboundEdgeStream | None = None
        self._edge_to_complete: int | None = None
        self._completed_ordinal = -1
        self.state = _PROCESS_INBOX if instreams else _COMPLETE
        self.items_in = 0
        """Items the processor removed from its inbox (read by metrics, written by this tasklet)."""
        self.items_out = 0
        """Items handed from the outbox to the outbound collectors."""

    def init(self) -> None:
        self.processor.init(self.outbox, self.context)

    def close(self) -> None:
        self.processor.close()

    # -- the step ---------------------------------------------------------------------------
    def call(self) -> int:
        progress, blocked = self._hand_over_outbox()
        state = self.state
        if state is _PROCESS_INBOX:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            progress |= self._process_inbox()
        elif state is _COMPLETE_EDGE:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            emitted = self._emitted()
            if self.processor.complete_edge(self._completed_ordinal):
                progress = True
                self.state = _PROCESS_INBOX if self._active_ordinals else _COMPLETE
            progress |= self._emitted() != emitted
        elif state is _COMPLETE:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            emitted = self._emitted()
            if self.processor.complete():
                progress = True
                self.state = _EMIT_DONE_ITEM
            progress |= self._emitted() != emitted
        elif state is _EMIT_DONE_ITEM:
            if self._emit_done():
                self.state = _END
                return DONE
            return MADE_PROGRESS if progress else NO_PROGRESS
        else:
            return WAS_ALREADY_DONE
        return MADE_PROGRESS if progress else NO_PROGRESS

    def _process_inbox(self) -> bool:
        inbox, processor = self.inbox, self.processor
        progress = False
        if not inbox:
            if not processor.try_process():
                return False
            progress = self._fill_inbox()
        if inbox:
            before, emitted = len(inbox), self._emitted()
            processor.process(self._current.ordinal, inbox)
            consumed = before - len(inbox)
            self.items_in += consumed
            progress |= consumed != 0 or self._emitted() != emitted
        if not inbox:
            if self._edge_to_complete is not None:
                self._completed_ordinal, self._edge_to_complete = self._edge_to_complete, None
                self.state = _COMPLETE_EDGE
                return True
            if self._active_ordinals == 0:
                self.state = _COMPLETE
                return True
        return progress

    def _fill_inbox(self) -> bool:
        """Drain one stream of the current group into the inbox, trying the next stream
        until one yields something or a full lap is done."""
        progress = False
        group = self._group
        tried = 0
        while group and tried < len(group):
            if self._cursor >= len(group):
                self._cursor = 0
            stream = group[self._cursor]
            self._current = stream
            result = stream.drain_to(self.inbox)
            tried += 1
            if result & PROGRESS_BIT:
                progress = True
            if result & DONE_BIT:
                group.pop(self._cursor)
                self._edge_to_complete = stream.ordinal
                self._active_ordinals -= 1
                if not group:
                    self._next_group()
                return True
            self._cursor += 1
            if progress:
                return True
        return progress

    def _next_group(self) -> None:
        self._group = self._groups.popleft() if self._groups else []
        self._cursor = 0

    # -- output -------------------------------------------------------------------------------
    def _emitted(self) -> int:
        buckets = self.outbox.buckets
        if len(buckets) == 1:
            return len(buckets[0])
        return sum(map(len, buckets))

    def _hand_over_outbox(self) -> tuple[bool, bool]:
        """Give every non-empty bucket to its collector. Returns (progress, blocked): blocked
        when a bucket is at capacity and could not be handed over."""
        progress = blocked = False
        buckets, capacities = self.outbox.buckets, self.outbox.capacities
        for ordinal, collector in enumerate(self._collectors):
            if collector.has_pending:
                if collector.flush():
                    progress = True
                elif buckets[ordinal]:
                    if len(buckets[ordinal]) >= capacities[ordinal]:
                        blocked = True
                    continue
            bucket = buckets[ordinal]
            if bucket:
                collector.offer_chunk(bucket)
                buckets[ordinal] = []
                self.items_out += len(bucket)
                progress = True
        return progress, blocked

    def _emit_done(self) -> bool:
        """True once all output and then DONE have been accepted by every collector."""
        if any(self.outbox.buckets):
            return False
        done = True
        for collector in self._collectors:
            if not collector.offer_special(DONE_ITEM):
                done = False
        return done

    def __repr__(self) -> str:
        return f"ProcessorTasklet({self.name!r}, {self.state.name})"
