"""Batch aggregation: by key or global, in one stage or as accumulate + combine."""

from __future__ import annotations

from typing import Any, Callable

from jet.core.aggregate import AggregateOperation
from jet.core.inbox import Inbox
from jet.core.processors.base import ChunkEmittingProcessor, Supplier


class AccumulateByKeyP(ChunkEmittingProcessor):
    """First stage of a grouped aggregation: emits (key, accumulator) per key at the end."""

    def __init__(self, key_fn: Callable[[Any], Any], aggregate: AggregateOperation) -> None:
        self._key_fn = key_fn
        self._aggregate = aggregate
        self._accumulators: dict = {}
        self._entries: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._aggregate.fold_keyed_chunk(self._accumulators, self._key_fn, inbox.take_chunk())

    def complete(self) -> bool:
        if self._entries is None:
            self._entries = list(self._accumulators.items())
            self._accumulators = {}
        return self.emit_list(self._entries)


class CombineByKeyP(ChunkEmittingProcessor):
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
            finish = self._aggregate.finish
            self._entries = [(key, finish(acc)) for key, acc in self._accumulators.items()]
            self._accumulators = {}
        return self.emit_list(self._entries)


class AggregateByKeyP(AccumulateByKeyP):
    """Single-stage grouped aggregation: emits (key, result) at the end."""

    complete = CombineByKeyP.complete


class AccumulateP(ChunkEmittingProcessor):
    """First stage of a global aggregation: emits its one accumulator at the end."""

    def __init__(self, aggregate: AggregateOperation, finish: bool = False) -> None:
        self._aggregate = aggregate
        self._finish = finish
        self._acc = aggregate.create()
        self._output: list | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._acc = self._aggregate.fold_chunk(self._acc, inbox.take_chunk())

    def complete(self) -> bool:
        if self._output is None:
            self._output = [self._aggregate.finish(self._acc) if self._finish else self._acc]
        return self.emit_list(self._output)


class CombineP(ChunkEmittingProcessor):
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
        if not self._received:
            return True
        if self._output is None:
            self._output = [self._aggregate.finish(self._acc)]
        return self.emit_list(self._output)


def accumulate_by_key_p(key_fn: Callable[[Any], Any], aggregate: AggregateOperation) -> Supplier:
    """Grouped aggregation, stage one (local): emits (key, accumulator) entries."""
    return lambda: AccumulateByKeyP(key_fn, aggregate)


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
