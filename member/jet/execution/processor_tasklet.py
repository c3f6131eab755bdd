"""ProcessorTasklet: drives one processor through its lifecycle, one small step per call."""

from __future__ import annotations

import enum
import time
from collections import deque
from typing import Any, Callable, Sequence

from jet.core.inbox import Inbox
from jet.core.outbox import MIN_SNAPSHOT_PORTION, SNAPSHOT_PORTION, Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, MIN_TIMESTAMP, SnapshotBarrier, Watermark
from jet.execution.inbound import InboundEdgeStream
from jet.execution.outbound import OutboundCollector
from jet.execution.queues import DONE_ITEM
from jet.execution.snapshot_portions import SnapshotPortions
from jet.execution.tasklet import DONE, DONE_BIT, MADE_PROGRESS, NO_PROGRESS, PROGRESS_BIT, WAS_ALREADY_DONE
from jet.execution.watermark_coalescer import create_coalescer


class ProcessorState(enum.Enum):
    """Where a ProcessorTasklet is in the life of its processor."""

    PROCESS_INBOX = "process_inbox"
    """Refill the inbox from the current priority group when empty; let the processor process it."""
    PROCESS_WATERMARK = "process_watermark"
    """The inbox is empty and a coalesced watermark is due: IDLE goes straight downstream, any
    other to try_process_watermark until it returns True."""
    COMPLETE_EDGE = "complete_edge"
    """An input ordinal is exhausted: call complete_edge(ordinal) until it returns True."""
    COMPLETE = "complete"
    """Every input is exhausted (or there is none): call complete() until it returns True."""
    RESTORE = "restore"
    """Feed the snapshot's entries to restore_from_snapshot, then finish_snapshot_restore."""
    SAVE_SNAPSHOT = "save_snapshot"
    """Every live input delivered the barrier (a source: a snapshot began): save_to_snapshot
    until True, then snapshot_commit_prepare until True, then hand the entries over."""
    EMIT_BARRIER = "emit_barrier"
    """Hand the barrier to every outbound collector after the output before it."""
    WAIT_FOR_SNAPSHOT_COMPLETED = "wait_for_snapshot_completed"
    """After a terminal barrier: wait for phase 2, commit, then end without complete()."""
    EMIT_DONE_ITEM = "emit_done_item"
    """Hand the last output downstream, then DONE to every outbound collector."""
    END = "end"
    """Finished; the tasklet reports done."""


_PROCESS_INBOX = ProcessorState.PROCESS_INBOX
_PROCESS_WATERMARK = ProcessorState.PROCESS_WATERMARK
_COMPLETE_EDGE = ProcessorState.COMPLETE_EDGE
_COMPLETE = ProcessorState.COMPLETE
_EMIT_DONE_ITEM = ProcessorState.EMIT_DONE_ITEM
_END = ProcessorState.END
_RESTORE = ProcessorState.RESTORE
_SAVE_SNAPSHOT = ProcessorState.SAVE_SNAPSHOT
_EMIT_BARRIER = ProcessorState.EMIT_BARRIER
_WAIT_FOR_SNAPSHOT_COMPLETED = ProcessorState.WAIT_FOR_SNAPSHOT_COMPLETED


class ProcessorTasklet:
    """Moves items from inbound queues through the processor into outbound collectors.

    Each call first hands the outbox's buckets to the collectors, then a watermark the
    processor forwarded. If a bucket (or that watermark) cannot be handed over (its downstream
    queues are full) the processor is not called at all: the tasklet yields, and the
    backpressure reaches the processor as a full outbox. Otherwise it runs one step of the
    state machine. Inputs are read by ascending priority: a group of edges is not read at all
    until every edge of the group before it is done.

    Watermarks are coalesced twice: per edge across its queues (``InboundEdgeStream``), then
    here across the input ordinals; the processor gets the result once the items drained
    before it are processed.

    Snapshot barriers are aligned the same two ways: once every live input ordinal delivered
    the barrier (exactly-once: an ordinal that did is not read until then) and the inbox is
    empty, the processor saves its state, prepares its commit and the barrier goes downstream.
    A processor with no live input (a source) snapshots between two ``complete()`` calls when
    the execution's :class:`SnapshotContext` publishes a new snapshot. Phase 2 (commit) runs at
    the start of a call, in any state.
    """

    def __init__(self, name: str, processor: Processor, context: Context,
                 instreams: Sequence[InboundEdgeStream],
                 collectors: Sequence[OutboundCollector],
                 outbox_capacities: Sequence[int], snapshot_context: "SnapshotContext | None" = None,
                 restore_entries: list | None = None, *, metrics_enabled: bool = True,
                 snapshot_partition: "Callable[[Any], int] | None" = None) -> None:
        """``metrics_enabled=False`` skips the counting that only metrics need (batches, back
        pressure, per-ordinal emitted counts); ``items_in``/``items_out`` are always counted.
        ``snapshot_partition``: the partition function its snapshot groups keyed entries by
        (:func:`~jet.execution.snapshot_portions.grouping_partition_fn`; None: no groups)."""
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
        ordinals = sorted(s.ordinal for s in instreams)
        self._wm_index = {ordinal: index for index, ordinal in enumerate(ordinals)}
        self._coalescer = create_coalescer(
            len(ordinals), [f"input ordinal {o} of {name}" for o in ordinals])
        self._idle_ordinals: set[int] = set()
        self._pending_wms: deque[Watermark] = deque()
        self._special_accepted: set[int] = set()
        self.state = _PROCESS_INBOX if instreams else _COMPLETE
        self._ssc = snapshot_context
        self._live_ordinals = set(ordinals)
        self._barrier_ordinals: set[int] = set()
        self._wait_for_all_barriers = bool(snapshot_context and snapshot_context.wait_for_all_barriers)
        self._pending_barrier: SnapshotBarrier | None = None
        self._aligning: SnapshotBarrier | None = None
        """The barrier some input ordinals delivered and others not yet."""
        self._barrier: SnapshotBarrier | None = None
        """The barrier of the snapshot being saved or emitted."""
        self._state_after_snapshot = self.state
        self._snapshot_partition = snapshot_partition
        self._portions: SnapshotPortions | None = None
        """The save in progress, across the calls that save a large state in portions."""
        self.saved_snapshot_id = snapshot_context.first_snapshot_id - 1 if snapshot_context else -1
        """The last snapshot this processor saved (or skipped, having ended)."""
        self.committed_snapshot_id = self.saved_snapshot_id
        """The last snapshot whose phase 2 this processor ran."""
        self._restore_inbox: Inbox | None = None
        if restore_entries is PROCESSOR_FINISHED:
            self.state = _EMIT_DONE_ITEM  # it had finished when the snapshot was taken
        elif restore_entries is not None:
            self._restore_inbox = Inbox()
            if restore_entries:
                self._restore_inbox.add_chunk(list(restore_entries))
            self._state_after_restore = self.state
            self.state = _RESTORE
        if snapshot_context is not None:
            snapshot_context.register(self, has_priority_groups=bool(self._groups))
        self.items_in = 0
        """Items the processor removed from its inbox (read by metrics, written by this tasklet)."""
        self.items_out = 0
        """Items handed from the outbox to the outbound collectors."""
        self.last_forwarded_wm = MIN_TIMESTAMP
        """The last watermark handed to every outbound collector (IDLE excluded)."""
        self.metrics_enabled = metrics_enabled
        self.received_batches = 0
        """Inbox fills that brought items (Jet's receivedBatches)."""
        self.inbound_queues = [queue for stream in instreams for queue in stream.queues]
        """Every inbound queue, for queuesSize/queuesCapacity (read at scrape time)."""
        self.snapshot_keys = 0
        """Entries of this processor's part of the last snapshot it saved."""
        self.emitted_per_ordinal = [0] * len(self._collectors)
        self.back_pressured_ns = [0] * len(self._collectors)
        """Per outbound ordinal, the time its collector could not hand everything over."""
        self.blocked_since = [0] * len(self._collectors)
        """Per outbound ordinal, ``perf_counter_ns()`` when it was found held back (0: it is not)."""
        self.to_vertices: list[str] = [""] * len(self._collectors)
        """The vertex each outbound ordinal feeds (set by the plan; metric labels)."""

    @property
    def top_observed_wm(self) -> int:
        """The highest coalesced watermark any input ordinal delivered (MIN_TIMESTAMP if none)."""
        return self._coalescer.top_observed_wm

    @property
    def coalesced_wm(self) -> int:
        """The last watermark coalesced over the input ordinals (MIN_TIMESTAMP if none)."""
        return self._coalescer.coalesced_wm

    @property
    def snapshot_bytes(self) -> int:
        """Bytes written of this processor's part of the last snapshot it saved (0: none)."""
        return 0 if self._ssc is None else self._ssc.saved_bytes.get(self, 0)

    def init(self) -> None:
        self.processor.init(self.outbox, self.context)

    def wants_polling(self) -> bool:
        """False only while this tasklet waits for nothing but input that wakes its thread: its
        inbox, outbox and collectors are empty and it reads inputs (a source, or a processor
        overriding ``try_process``, is time-driven or polls something: polled unless the
        processor says ``needs_polling = False``)."""
        if self.inbox or self._pending_wms or self.outbox.pending_special is not None:
            return True
        if any(self.outbox.buckets) or any(c.has_pending for c in self._collectors):
            return True
        declared = getattr(self.processor, "needs_polling", None)
        if declared is not None:
            return bool(declared)
        return self.state is not _PROCESS_INBOX or type(self.processor).try_process is not Processor.try_process

    def close(self) -> None:
        self.processor.close()

    # -- the step ---------------------------------------------------------------------------
    def call(self) -> int:
        progress, blocked = self._hand_over_outbox()
        ssc = self._ssc
        if ssc is not None and ssc.active_phase2_id > self.committed_snapshot_id:
            if self.state is not _RESTORE and self.state is not _END and not self._commit_finish():
                return MADE_PROGRESS if progress else NO_PROGRESS
        state = self.state
        if state is _PROCESS_INBOX:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            progress |= self._process_inbox()
        elif state is _PROCESS_WATERMARK:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            progress |= self._process_watermark()
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
            if ssc is not None and ssc.active_phase1_id > self.saved_snapshot_id:
                self._begin_snapshot(SnapshotBarrier(ssc.active_phase1_id, ssc.active_is_terminal))
                return MADE_PROGRESS
            emitted = self._emitted()
            if self.processor.complete():
                progress = True
                self.state = _EMIT_DONE_ITEM
            progress |= self._emitted() != emitted
        elif state is _SAVE_SNAPSHOT:
            if blocked:
                return MADE_PROGRESS if progress else NO_PROGRESS
            progress |= self._save_snapshot()
        elif state is _EMIT_BARRIER:
            if self.outbox.pending_special is None:
                self._barrier_emitted()
                progress = True
        elif state is _WAIT_FOR_SNAPSHOT_COMPLETED:
            pass  # phase 2 (at the top of the call) moves on to EMIT_DONE_ITEM
        elif state is _RESTORE:
            progress |= self._restore()
        elif state is _EMIT_DONE_ITEM:
            if self._emit_done():
                self.state = _END
                if ssc is not None:
                    ssc.tasklet_ended(self)
                return DONE
            return MADE_PROGRESS if progress else NO_PROGRESS
        else:
            return WAS_ALREADY_DONE
        if self.outbox.pending_special is not None:
            # The processor just forwarded a watermark: hand it on now, not at the next call.
            progress |= self._hand_over_outbox()[0]
        return MADE_PROGRESS if progress else NO_PROGRESS

    def _process_inbox(self) -> bool:
        inbox, processor = self.inbox, self.processor
        progress = False
        if not inbox:
            if not processor.try_process():
                return False
            progress = self._fill_inbox()
            if inbox and self.metrics_enabled:
                self.received_batches += 1
        if inbox:
            before, emitted = len(inbox), self._emitted()
            processor.process(self._current.ordinal, inbox)
            consumed = before - len(inbox)
            self.items_in += consumed
            progress |= consumed != 0 or self._emitted() != emitted
        if not inbox and self._leave_empty_inbox():
            return True
        return progress

    def _leave_empty_inbox(self) -> bool:
        """The inbox is empty: go to what is due (a watermark, an edge to complete, a
        snapshot, the end)."""
        if self._pending_wms:
            self.state = _PROCESS_WATERMARK
        elif self._edge_to_complete is not None:
            self._completed_ordinal, self._edge_to_complete = self._edge_to_complete, None
            self.state = _COMPLETE_EDGE
        elif self._pending_barrier is not None:
            barrier, self._pending_barrier = self._pending_barrier, None
            self._begin_snapshot(barrier)
        elif self._active_ordinals == 0:
            self.state = _COMPLETE
        else:
            return False
        return True

    def _process_watermark(self) -> bool:
        """Offer the first pending watermark; True when it was taken."""
        watermark = self._pending_wms[0]
        if watermark.timestamp == MAX_TIMESTAMP:
            taken = self.outbox.offer_watermark(IDLE_MESSAGE)
        else:
            taken = self.processor.try_process_watermark(watermark)
        if not taken:
            return False
        self._pending_wms.popleft()
        if not self._pending_wms:
            self._add_pending_wm(self._coalescer.check_wm_history())
            if not self._pending_wms:
                self.state = _PROCESS_INBOX
                self._leave_empty_inbox()
        return True

    def _fill_inbox(self) -> bool:
        """Drain one stream of the current group into the inbox, trying the next stream
        until one yields something or a full lap is done."""
        progress = False
        group = self._group
        tried = 0
        aligning = self._barrier_ordinals and self._wait_for_all_barriers
        while group and tried < len(group):
            if self._cursor >= len(group):
                self._cursor = 0
            stream = group[self._cursor]
            if aligning and stream.ordinal in self._barrier_ordinals:
                self._cursor += 1
                tried += 1
                continue
            self._current = stream
            result = stream.drain_to(self.inbox)
            tried += 1
            if result & PROGRESS_BIT:
                progress = True
            watermark = stream.pending_watermark
            if watermark is not None:
                stream.pending_watermark = None
                self._observe_input_wm(stream.ordinal, watermark)
            elif self._idle_ordinals and self.inbox:
                self._observe_input_event(stream.ordinal)
            if stream.pending_barrier is not None:
                barrier, stream.pending_barrier = stream.pending_barrier, None
                self._on_input_barrier(stream.ordinal, barrier)
            if result & DONE_BIT:
                group.pop(self._cursor)
                self._edge_to_complete = stream.ordinal
                self._active_ordinals -= 1
                self._idle_ordinals.discard(stream.ordinal)
                self._add_pending_wm(self._coalescer.queue_done(self._wm_index[stream.ordinal]))
                self._live_ordinals.discard(stream.ordinal)
                if self._barrier_ordinals:
                    self._check_barriers_aligned()
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
        if not self._groups and self._ssc is not None:
            self._ssc.priority_groups_done(self)

    # -- snapshots ----------------------------------------------------------------------------
    def _on_input_barrier(self, ordinal: int, barrier: SnapshotBarrier) -> None:
        aligning = self._aligning
        if barrier.snapshot_id <= self.saved_snapshot_id or (
                aligning is not None and barrier.snapshot_id < aligning.snapshot_id):
            return  # a snapshot a newer one superseded (see SnapshotContext.start_phase1)
        if aligning is not None and barrier.snapshot_id > aligning.snapshot_id:
            self._barrier_ordinals.clear()  # the older snapshot was abandoned
        self._aligning = barrier
        if barrier.is_terminal:
            self._wait_for_all_barriers = True
        self._barrier_ordinals.add(ordinal)
        self._check_barriers_aligned()

    def _check_barriers_aligned(self) -> None:
        """Every live ordinal delivered the barrier: the snapshot is due once the inbox is empty."""
        if self._aligning is not None and self._live_ordinals <= self._barrier_ordinals:
            self._pending_barrier, self._aligning = self._aligning, None
            self._barrier_ordinals.clear()

    def _begin_snapshot(self, barrier: SnapshotBarrier) -> None:
        self._barrier = barrier
        self._state_after_snapshot = _PROCESS_INBOX if self._active_ordinals else _COMPLETE
        self._prepared = False
        self.state = _SAVE_SNAPSHOT

    def _save_snapshot(self) -> bool:
        """save_to_snapshot until True, then snapshot_commit_prepare until True, then the
        entries go to the snapshot context and the barrier to the outbox.

        What the processor offered is pickled after every call (:class:`SnapshotPortions`),
        and a call that filled the bounded snapshot buffer returns, so the cooperative thread
        serves other tasklets between the portions of a large state. Nothing else of the
        processor runs until the save is over: its state stays as it was at the barrier."""
        processor, outbox = self.processor, self.outbox
        portions = self._portions
        if portions is None:
            portions = self._portions = SnapshotPortions(self.context.vertex_name, self._snapshot_partition)
            # A save's first call may offer a whole portion: a processor that saves a few entries
            # at once, ignoring offer_to_snapshot's answer, is never refused.
            outbox.snapshot_capacity = SNAPSHOT_PORTION
        started = time.perf_counter()
        outbox.snapshot_refused = False
        if not self._prepared:
            done = processor.save_to_snapshot()
            taken = portions.take(outbox, started)
            if not done:
                return taken != 0
            self._check_nothing_refused("save_to_snapshot")
            self._prepared = True
            if taken > MIN_SNAPSHOT_PORTION:
                return True  # snapshot_commit_prepare in the next call: this one pickled a portion
        done = processor.snapshot_commit_prepare()
        portions.take(outbox, started)
        if not done:
            return True
        self._check_nothing_refused("snapshot_commit_prepare")
        self._portions = None
        barrier = self._barrier
        self.saved_snapshot_id = barrier.snapshot_id
        self.snapshot_keys = portions.count
        self._ssc.tasklet_saved(self, barrier.snapshot_id, self.context.vertex_name, portions)
        if not outbox.offer_watermark(barrier):
            raise AssertionError(f"{self.name}: a special item was pending when the barrier was due")
        self.state = _EMIT_BARRIER
        if self.outbox.pending_special is not None:
            self._hand_over_outbox()
        if self.outbox.pending_special is None:
            self._barrier_emitted()
        return True

    def _check_nothing_refused(self, method: str) -> None:
        """A processor's save that returned True after ``offer_to_snapshot`` refused an entry
        would leave that entry out of the snapshot: fail the job instead of losing it."""
        if self.outbox.snapshot_refused:
            raise RuntimeError(
                f"vertex {self.context.vertex_name!r}: {type(self.processor).__name__}.{method}() returned True"
                " after offer_to_snapshot() refused an entry, which would be missing from the snapshot;"
                " return False and offer it again on the next call")

    def _barrier_emitted(self) -> None:
        if self._barrier.is_terminal:
            self.state = _WAIT_FOR_SNAPSHOT_COMPLETED
        else:
            self.state = self._state_after_snapshot
            if self.state is _PROCESS_INBOX:
                self._leave_empty_inbox()

    def _commit_finish(self) -> bool:
        """Phase 2 of the published snapshot; True once snapshot_commit_finish returned True."""
        ssc = self._ssc
        snapshot_id = ssc.active_phase2_id
        # A tasklet that did not save the snapshot (it was restoring) has nothing to commit.
        if snapshot_id <= self.saved_snapshot_id and not self.processor.snapshot_commit_finish(ssc.phase2_success):
            return False
        self.committed_snapshot_id = snapshot_id
        ssc.tasklet_committed(self, snapshot_id)
        if self.state is _WAIT_FOR_SNAPSHOT_COMPLETED and snapshot_id >= self._barrier.snapshot_id:
            self.state = _EMIT_DONE_ITEM
        return True

    def _restore(self) -> bool:
        inbox = self._restore_inbox
        if inbox:
            before = len(inbox)
            self.processor.restore_from_snapshot(inbox)
            return len(inbox) != before
        if not self.processor.finish_snapshot_restore():
            return False
        self._restore_inbox = None
        self.state = self._state_after_restore
        return True

    # -- the second coalescing level: across input ordinals -----------------------------------
    def _observe_input_event(self, ordinal: int) -> None:
        if ordinal in self._idle_ordinals:
            self._idle_ordinals.discard(ordinal)
            self._coalescer.observe_event(self._wm_index[ordinal])

    def _observe_input_wm(self, ordinal: int, watermark: Watermark) -> None:
        if self.inbox:
            self._observe_input_event(ordinal)  # the items drained before it
        if watermark.timestamp == MAX_TIMESTAMP:
            self._idle_ordinals.add(ordinal)
        else:
            self._idle_ordinals.discard(ordinal)
        self._add_pending_wm(self._coalescer.observe_wm(self._wm_index[ordinal], watermark))

    def _add_pending_wm(self, watermark: Watermark | None) -> None:
        if watermark is not None:
            self._pending_wms.append(watermark)

    # -- output -------------------------------------------------------------------------------
    def _emitted(self) -> int:
        buckets = self.outbox.buckets
        if len(buckets) == 1:
            return len(buckets[0])
        return sum(map(len, buckets))

    def _hand_over_outbox(self) -> tuple[bool, bool]:
        """Give every non-empty bucket to its collector, then a pending watermark. Returns
        (progress, blocked): blocked when a bucket at capacity, or the watermark, could not
        be handed over."""
        progress = blocked = False
        outbox = self.outbox
        buckets, capacities = outbox.buckets, outbox.capacities
        counting = self.metrics_enabled
        for ordinal, collector in enumerate(self._collectors):
            if collector.has_pending:
                if collector.flush():
                    progress = True
                    if counting:
                        self._unblocked(ordinal)
                else:
                    if counting and not self.blocked_since[ordinal]:
                        self.blocked_since[ordinal] = time.perf_counter_ns()
                    if buckets[ordinal]:
                        if len(buckets[ordinal]) >= capacities[ordinal]:
                            blocked = True
                        continue
            bucket = buckets[ordinal]
            if bucket:
                collector.offer_chunk(bucket)
                buckets[ordinal] = []
                self.items_out += len(bucket)
                if counting:
                    self.emitted_per_ordinal[ordinal] += len(bucket)
                    if collector.has_pending and not self.blocked_since[ordinal]:
                        self.blocked_since[ordinal] = time.perf_counter_ns()  # part of it did not fit
                progress = True
        if outbox.pending_special is not None:
            if self._hand_over_special():
                progress = True
            else:
                blocked = True
        return progress, blocked

    def _unblocked(self, ordinal: int) -> None:
        """The ordinal's collector handed everything over: end its back-pressured stretch."""
        since = self.blocked_since[ordinal]
        if since:
            self.back_pressured_ns[ordinal] += time.perf_counter_ns() - since
            self.blocked_since[ordinal] = 0

    def _hand_over_special(self) -> bool:
        """Offer the outbox's pending watermark to every collector, after all the data before
        it; True once every collector took it."""
        outbox = self.outbox
        if any(outbox.buckets):
            return False
        special, accepted = outbox.pending_special, self._special_accepted
        for index, collector in enumerate(self._collectors):
            if index not in accepted and collector.offer_special(special):
                accepted.add(index)
        if len(accepted) < len(self._collectors):
            return False
        accepted.clear()
        outbox.special_taken()
        if type(special) is Watermark and special.timestamp != MAX_TIMESTAMP:
            self.last_forwarded_wm = special.timestamp
        return True

    def _emit_done(self) -> bool:
        """True once all output and then DONE have been accepted by every collector."""
        if any(self.outbox.buckets) or self.outbox.pending_special is not None:
            return False
        done = True
        for collector in self._collectors:
            if not collector.offer_special(DONE_ITEM):
                done = False
        return done

    def __repr__(self) -> str:
        return f"ProcessorTasklet({self.name!r}, {self.state.name})"


from jet.execution.snapshot_context import PROCESSOR_FINISHED, SnapshotContext  # noqa: E402
