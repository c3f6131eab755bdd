"""The processor contract (Jet's Processor and AbstractProcessor) and its context."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.special_items import Watermark
from jet.job_config import ProcessingGuarantee


@dataclass
class Context:
    """Where a processor runs: its indices, the parallelism of its vertex and the cluster."""

    vertex_name: str = "vertex"
    local_index: int = 0
    local_parallelism: int = 1
    member_index: int = 0
    member_count: int = 1
    job_id: str = "local"
    cooperative_threads: int = 1
    logger: logging.Logger = field(default=None)  # type: ignore[assignment]
    results: dict = field(default_factory=dict)
    """Named result lists of this job on this member, returned to whoever submitted the job."""
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.NONE
    """The job's guarantee: sinks write two-phase under EXACTLY_ONCE, sources keep offsets."""

    def __post_init__(self) -> None:
        if self.logger is None:
            self.logger = logging.getLogger(f"jet.processor.{self.vertex_name}#{self.global_index}")

    @property
    def global_index(self) -> int:
        """member index x local parallelism + local index: unique in the cluster."""
        return self.member_index * self.local_parallelism + self.local_index

    @property
    def snapshots_enabled(self) -> bool:
        """Whether the job takes snapshots (its guarantee is not NONE)."""
        return self.processing_guarantee is not ProcessingGuarantee.NONE

    @property
    def total_parallelism(self) -> int:
        """Processors of this vertex in the whole cluster."""
        return self.local_parallelism * self.member_count


class Processor:
    """The unit of work of a vertex; one instance per tasklet.

    Every boolean method means "done" when it returns True and "call me again" when it
    returns False. A cooperative processor (the default) must not block and should return
    within about a millisecond; it must return as soon as ``outbox.offer`` refuses an item
    and offer that same item again on the next call. A non-cooperative processor
    (``is_cooperative = False``) gets a thread of its own and may block, but should still
    return about once a second.
    """

    #: False makes the engine run this processor on a dedicated thread.
    is_cooperative: bool = True
    #: Whether its cooperative thread must call it while it has no input: None (the default) means
    #: yes for a source or a processor overriding ``try_process`` (time-driven, or polling something
    #: outside the job), no for the rest; False lets an idle thread park (whatever gives it work
    #: must then call ``jet.execution.backoff.wake_parked_workers()``); True always polls.
    needs_polling: bool | None = None

    outbox: Outbox
    context: Context

    def init(self, outbox: Outbox, context: Context) -> None:
        """Called once before anything else. Subclasses overriding it must call super()."""
        self.outbox = outbox
        self.context = context

    def process(self, ordinal: int, inbox: Inbox) -> None:
        """Process some or all items of ``inbox`` (from input ``ordinal``), removing them."""
        raise NotImplementedError(
            f"{type(self).__name__} received input on ordinal {ordinal} but does not implement"
            " process()")

    def try_process(self) -> bool:
        """Called before each inbox refill; return False to hold off new input."""
        return True

    def complete_edge(self, ordinal: int) -> bool:
        """Input ``ordinal`` is exhausted. Return True when done reacting to that."""
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        """Every input's watermark reached ``watermark.timestamp`` (the coalesced minimum).

        Called after every item received before the watermark was processed, with strictly
        increasing timestamps. The processor must forward the watermark itself (the default
        does only that) before returning True; return False to be called again with the same
        watermark. A sink may just return True.
        """
        return self.outbox.offer_watermark(watermark)

    def complete(self) -> bool:
        """All inputs are exhausted (a source: called until it returns True)."""
        return True

    def close(self) -> None:
        """Release resources; called once when the job ends, however it ends."""

    # -- snapshots (Jet's fault tolerance) ----------------------------------------------------
    def save_to_snapshot(self) -> bool:
        """Save the state with ``outbox.offer_to_snapshot(key, value)``; True when all is saved.

        Called once every live input delivered the snapshot barrier and the inbox is empty (a
        source: between two ``complete()`` calls). Keyed state goes under the key the vertex's
        partitioned input edge routes by, so at restore it reaches the processor that owns that
        key's partition, on however many members; anything else goes under a
        :class:`~jet.core.snapshot_keys.BroadcastKey` and reaches every processor of the vertex.
        Values must pickle. The engine pickles what was offered before the processor runs
        again, so a value may be live state the next items change in place (no copy needed).
        The default saves nothing (a stateless processor)."""
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        """Restore from ``(key, value)`` entries of the last snapshot, removing those handled.

        Called before any other input, until the inbox is empty, with every entry of this
        processor's keys and every broadcast entry of its vertex."""
        raise NotImplementedError(
            f"{type(self).__name__} received snapshot state but does not implement restore_from_snapshot()")

    def finish_snapshot_restore(self) -> bool:
        """Every entry was restored; True when done (merge broadcast values, reopen resources)."""
        return True

    def snapshot_commit_prepare(self) -> bool:
        """Phase 1 of a two-phase sink or source, after :meth:`save_to_snapshot`: make the work
        since the last snapshot durable but invisible, saving what identifies it in the snapshot
        (it may still ``offer_to_snapshot``); True when done."""
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        """Phase 2: the snapshot is complete everywhere (``success``) or failed; make the prepared
        work visible (or keep it for the next snapshot). Must not emit; may be called with items
        in the inbox; True when done. A prepared transaction must never be lost: it is also in
        the snapshot, and a restore commits it."""
        return True


class AbstractProcessor(Processor):
    """A Processor with Jet's helpers for emitting without hand-rolling the retry rule.

    Override :meth:`try_process_item` to handle one item at a time, and emit with
    :meth:`try_emit` or :meth:`emit_from`, which keep the pending item for the retry.
    """

    _pending_iterator: Iterator[Any] | None = None
    _pending_source: Any = None
    _pending_item: Any = None
    _has_pending_item: bool = False

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        """Calls :meth:`restore_from_snapshot_entry` for each ``(key, value)`` entry."""
        while not inbox.is_empty():
            key, value = inbox.peek()
            self.restore_from_snapshot_entry(key, value)
            inbox.remove()

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        """Restore one snapshot entry (Jet's ``restoreFromSnapshot(key, value)``)."""
        raise NotImplementedError(
            f"{type(self).__name__} received snapshot state but does not implement "
            "restore_from_snapshot_entry()")

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        """Handle one input item; return False to be offered the same item again."""
        raise NotImplementedError(f"{type(self).__name__} must implement try_process_item()")

    def process(self, ordinal: int, inbox: Inbox) -> None:
        while not inbox.is_empty():
            if not self.try_process_item(ordinal, inbox.peek()):
                return
            inbox.remove()

    def try_emit(self, item: Any, ordinal: int | None = None) -> bool:
        """``outbox.offer`` under a friendlier name (a watermark goes to every ordinal)."""
        if type(item) is Watermark:
            return self.outbox.offer_watermark(item)
        return self.outbox.offer(item, ordinal)

    def emit_from(self, items: Iterable[Any], ordinal: int | None = None) -> bool:
        """Emit everything ``items`` yields; return True once all of it is in the outbox.

        Pass the same iterator (typically a generator) on every call until it returns True;
        an item the outbox refused is kept and offered first next time.
        """
        if self._pending_iterator is None or self._pending_source is not items:
            self._pending_source = items
            self._pending_iterator = iter(items)
            self._has_pending_item = False
        offer = self.outbox.offer
        if self._has_pending_item:
            if not offer(self._pending_item, ordinal):
                return False
            self._has_pending_item = False
        for item in self._pending_iterator:
            if not offer(item, ordinal):
                self._pending_item = item
                self._has_pending_item = True
                return False
        self._pending_iterator = None
        self._pending_source = None
        return True

    def flat_mapper(self, fn: Callable[[Any], Iterable[Any]],
                    ordinal: int | None = None) -> Callable[[Any], bool]:
        """A ``try_process_item`` body that emits everything ``fn(item)`` yields.

        ``return self._mapper(item)`` with ``self._mapper = self.flat_mapper(fn)``: the
        returned callable is True once the item's outputs are all emitted.
        """
        state: dict[str, Any] = {"item": _NO_ITEM, "items": None}

        def try_process(item: Any) -> bool:
            if state["item"] is not item:
                state["item"] = item
                state["items"] = iter(fn(item))
            if self.emit_from(state["items"], ordinal):
                state["item"] = _NO_ITEM
                return True
            return False

        return try_process


_NO_ITEM = object()
