"""Batch aggregation: by key or global, in one stage or as accumulate + combine.

Snapshots (:mod:`jet.core.processors.snapshot_state`): grouped stages save ``key ->
accumulator`` (a key restored twice is combined); the global combine stage and the single-stage
global aggregation, one processor fed through ``all_to_one(vertex name)``, save their
accumulator under the vertex's name; the global accumulate stage saves its partial under
``BroadcastKey(("acc", global_index))`` and the processor with index ``saved % total`` combines it
back. What was received but not yet emitted is state; what is in the outbox is not.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.aggregate import AggregateOperation
from jet.core.batch_fold import KeyedBatchFolder
from jet.core.columnar import batch_to_rows, is_batch
from jet.core.inbox import Inbox
from jet.core.processors.base import ChunkEmittingProcessor, Supplier
from jet.core.processors.snapshot_state import (global_key, is_own_share, merge_keyed, own_key, tagged,
                                                unexpected_entry)


#: Items a grouped first stage gathers from its inbox before folding them in one call, when the
#: operation folds whole keyed chunks: per-chunk costs (e.g. ``all_of`` regrouping per key) then
#: spread over many items even when a chunk holds about one item per key.
KEYED_FOLD_ITEMS = 16_384


class _KeyedStateP(ChunkEmittingProcessor):
    """Saves and restores ``_accumulators`` as ``key -> accumulator`` entries."""

    _aggregate: AggregateOperation
    _accumulators: dict

    def fold_pending(self) -> None:
        """Fold any input gathered and not folded yet (see :data:`KEYED_FOLD_ITEMS`)."""

    def save_to_snapshot(self) -> bool:
        self.fold_pending()  # nothing comes in while a save is in progress: a no-op after the first call
        return self.save_entries(self._accumulators.items)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        accumulators, aggregate, vertex = self._accumulators, self._aggregate, self.context.vertex_name
        for key, acc in inbox.take_chunk():
            merge_keyed(accumulators, key, acc, aggregate, vertex)


class AccumulateByKeyP(_KeyedStateP):
    """First stage of a grouped aggregation: emits (key, accumulator) per key at the end.

    With ``batch_row_type`` its items are ``pyarrow.RecordBatch``es standing for rows of that
    type ("tuple" or "dict"): a batch is folded in Arrow when the key and the operation read
    columns (:mod:`jet.core.batch_fold`), else its rows are folded as any rows are.
    """

    def __init__(self, key_fn: Callable[[Any], Any], aggregate: AggregateOperation,
                 batch_row_type: str | None = None) -> None:
        self._key_fn = key_fn
        self._aggregate = aggregate
        self._accumulators: dict = {}
        self._entries: list | None = None
        self._pending: list = []
        self._gather = aggregate.accumulate_keyed_chunk is not None
        self._batch_row_type = batch_row_type
        self._batch_folder = None if batch_row_type is None else KeyedBatchFolder.for_operation(
            key_fn, aggregate, batch_row_type)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self._batch_row_type is not None:
            self._fold_batches(inbox.take_chunk())
            return
        if not self._gather:
            self._aggregate.fold_keyed_chunk(self._accumulators, self._key_fn, inbox.take_chunk())
            return
        pending = self._pending
        pending += inbox.take_chunk()
        if len(pending) >= KEYED_FOLD_ITEMS:
            self.fold_pending()

    def fold_pending(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self._aggregate.fold_keyed_chunk(self._accumulators, self._key_fn, pending)

    def _fold_batches(self, items: list) -> None:
        folder, pending = self._batch_folder, self._pending
        for item in items:
            if not is_batch(item):
                pending.append(item)
            elif folder is None or not folder.fold(self._accumulators, item):
                pending += batch_to_rows(item, self._batch_row_type)
        if pending and (not self._gather or len(pending) >= KEYED_FOLD_ITEMS):
            self.fold_pending()

    def complete(self) -> bool:
        if self._entries is None:
            self.fold_pending()
            self._entries = list(self._accumulators.items())
            self._accumulators = {}
        return self.emit_list(self._entries)


class CombineByKeyP(_KeyedStateP):
    """Second stage: merges (key, accumulator) entries, emits (key, result) at the end."""

    def __init__(self, aggregate: AggregateOperation) -> None:
        if aggregate.combine is None:
            raise ValueError(f"combine_by_key_p: aggregate {aggregate.name!r} has no combine")
        self._aggregate = aggregate
        self._accumulators: dict = {}
        self._entries: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._aggregate.combine_into(self._accumulators, inbox.take_chunk())

    def complete(self) -> bool:
        if self._entries is None:
            self.fold_pending()
            finish = self._aggregate.finish
            self._entries = [(key, finish(acc)) for key, acc in self._accumulators.items()]
            self._accumulators = {}
        return self.emit_list(self._entries)


class AggregateByKeyP(AccumulateByKeyP):
    """Single-stage grouped aggregation: emits (key, result) at the end."""

    complete = CombineByKeyP.complete


class _GlobalStateP(ChunkEmittingProcessor):
    """Saves and restores the one accumulator ``_acc`` (``_received``: it holds anything).

    The value saved is ``(finished, acc)``: a processor that already emitted its output saves
    ``(True, None)``, so the processor restoring it does not emit it again."""

    _aggregate: AggregateOperation
    _acc: Any = None
    _received = False
    _output: list | None = None
    _finished = False
    #: Saved per processor under a BroadcastKey (a first stage) rather than under the vertex's name.
    _per_processor = False

    def save_to_snapshot(self) -> bool:
        if not self.finish_emitting():
            return False
        finished = self._finished or self._output is not None
        if self._received or finished:
            key = own_key("acc", self.context) if self._per_processor else global_key(self.context)
            self.outbox.offer_to_snapshot(key, (True, None) if finished else (False, self._acc))
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        context = self.context
        for key, (finished, acc) in inbox.take_chunk():
            if self._per_processor:
                saved_index = tagged(key, "acc")
                if saved_index is None:
                    raise unexpected_entry(context.vertex_name, self, key)
                if not is_own_share(saved_index, context):
                    continue
            elif key != global_key(context):
                raise unexpected_entry(context.vertex_name, self, key)
            if finished:
                self._finished = True
                continue
            if self._received:
                state = {None: self._acc}
                merge_keyed(state, None, acc, self._aggregate, context.vertex_name)
                acc = state[None]
            self._acc, self._received = acc, True

    def finish_snapshot_restore(self) -> bool:
        # A restored accumulator still has to go out, whatever else was finished.
        self._finished = self._finished and not self._received
        return True


class AccumulateP(_GlobalStateP):
    """First stage of a global aggregation: emits its one accumulator at the end (``finish``:
    the single-stage aggregation, emitting the finished result)."""

    def __init__(self, aggregate: AggregateOperation, finish: bool = False) -> None:
        self._aggregate = aggregate
        self._finish = finish
        self._per_processor = not finish
        self._acc = aggregate.create()
        self._output: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._acc = self._aggregate.fold_chunk(self._acc, inbox.take_chunk())
        self._received = True

    def complete(self) -> bool:
        if self._finished:
            return True
        if self._finish and not self._received and self.context.global_index != 0:
            # The single stage's all-to-one edge feeds the first processor (FIRST_PROCESSOR_KEY):
            # it alone gives the result of an empty input, the others stay silent unless fed.
            return True
        if self._output is None:
            self._output = [self._aggregate.finish(self._acc) if self._finish else self._acc]
        return self.emit_list(self._output)


class CombineP(_GlobalStateP):
    """Second stage of a global aggregation: merges partial accumulators, emits the result.

    It emits only if it received a partial, so the processors that an all-to-one edge does
    not feed stay silent and the result appears once in the cluster.
    """

    def __init__(self, aggregate: AggregateOperation) -> None:
        if aggregate.combine is None:
            raise ValueError(f"combine_p: aggregate {aggregate.name!r} has no combine")
        self._aggregate = aggregate
        self._acc: Any = None
        self._received = False
        self._output: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        combine = self._aggregate.combine
        for partial in inbox.take_chunk():
            self._acc = combine(self._acc, partial) if self._received else partial
            self._received = True

    def complete(self) -> bool:
        if not self._received or self._finished:
            return True
        if self._output is None:
            self._output = [self._aggregate.finish(self._acc)]
        return self.emit_list(self._output)


def accumulate_by_key_p(key_fn: Callable[[Any], Any], aggregate: AggregateOperation,
                        batch_row_type: str | None = None) -> Supplier:
    """Grouped aggregation, stage one (local): emits (key, accumulator) entries. With
    ``batch_row_type`` it takes RecordBatches of rows of that type (see :class:`AccumulateByKeyP`)."""
    return lambda: AccumulateByKeyP(key_fn, aggregate, batch_row_type)


def combine_by_key_p(aggregate: AggregateOperation) -> Supplier:
    """Grouped aggregation, stage two: combines (key, accumulator) entries, emits (key, result)."""
    if aggregate.combine is None:
        raise ValueError(f"combine_by_key_p: aggregate {aggregate.name!r} has no combine")
    return lambda: CombineByKeyP(aggregate)


def aggregate_by_key_p(key_fn: Callable[[Any], Any], aggregate: AggregateOperation) -> Supplier:
    """Single-stage grouped aggregation: emits (key, result)."""
    return lambda: AggregateByKeyP(key_fn, aggregate)


def accumulate_p(aggregate: AggregateOperation) -> Supplier:
    """Global aggregation, stage one: emits this processor's accumulator."""
    return lambda: AccumulateP(aggregate)


def combine_p(aggregate: AggregateOperation) -> Supplier:
    """Global aggregation, stage two: combines accumulators, emits the finished result."""
    if aggregate.combine is None:
        raise ValueError(f"combine_p: aggregate {aggregate.name!r} has no combine")
    return lambda: CombineP(aggregate)


def aggregate_p(aggregate: AggregateOperation) -> Supplier:
    """Single-stage global aggregation: emits the finished result of everything it received."""
    return lambda: AccumulateP(aggregate, finish=True)
