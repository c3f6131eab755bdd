"""Ready-made processors: transforms, aggregations, sources and sinks.

Each factory returns a processor *supplier* (a zero-argument callable), ready for
``dag.new_vertex(name, supplier)``. Transforms work on whole chunks: a fused chain of maps,
filters and flat-maps is one pipeline of C-level iterators over the chunk, so no Python call
is spent per item beyond the user's own function.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import chain, islice
from typing import Any, Callable, Iterable, Iterator

from jet.core.aggregate import AggregateOperation
from jet.core.chain_contract import ChainContract
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor

Supplier = Callable[[], Processor]
ChunkFn = Callable[[list], list]

_STEP_KINDS = ("map", "filter", "flat_map")


class ChunkEmittingProcessor(Processor):
    """A processor that emits prepared lists in outbox-sized chunks, resuming after a refusal."""

    _results: list | None = None
    _position = 0

    def emit_list(self, results: list) -> bool:
        """Emit ``results`` (the same list on every call) until all is in; then True.

        The list may be handed downstream as it is: do not read or change it after."""
        if self._results is not results:
            self._results, self._position = results, 0
        outbox = self.outbox
        capacity = max(outbox.capacities, default=len(results)) or 1
        while self._position < len(results):
            if self._position == 0 and len(results) <= capacity:
                chunk = results  # handed over whole: the caller does not read it again
            else:
                chunk = results[self._position:self._position + capacity]
            if not outbox.offer_chunk(chunk):
                return False
            self._position += len(chunk)
        self._results = None
        return True


def compile_chain(steps: Sequence[tuple[str, Callable[[Any], Any]]]) -> ChunkFn:
    """One function from an input chunk to the output chunk of a chain of stateless steps.

    ``steps`` is a sequence of ("map" | "filter" | "flat_map", fn). map emits fn(item);
    filter keeps items for which fn(item) is truthy; flat_map emits every item of the
    iterable fn(item) returns.
    """
    if not steps:
        raise ValueError("a chain needs at least one step")
    for kind, fn in steps:
        if kind not in _STEP_KINDS:
            raise ValueError(f"unknown step kind {kind!r}; expected one of {_STEP_KINDS}")
        if not callable(fn):
            raise TypeError(f"the {kind} step needs a callable, got {fn!r}")
    steps = tuple(steps)
    if len(steps) == 1:
        kind, fn = steps[0]
        if kind == "map":
            return lambda chunk: list(map(fn, chunk))
        if kind == "filter":
            return lambda chunk: list(filter(fn, chunk))
        return lambda chunk: list(chain.from_iterable(map(fn, chunk)))

    def run_chain(chunk: list) -> list:
        items: Iterable[Any] = chunk
        for kind, fn in steps:
            if kind == "map":
                items = map(fn, items)
            elif kind == "filter":
                items = filter(fn, items)
            else:
                items = chain.from_iterable(map(fn, items))
        return list(items)

    return run_chain


class TransformP(Processor):
    """Applies a chunk function to its input and emits the result to every ordinal.

    It takes input in slices sized so that the output of one call stays near the outbox
    capacity, even for flat-maps that multiply the item count.
    """

    def __init__(self, chunk_fn: ChunkFn, contract: ChainContract | None = None) -> None:
        self._chunk_fn = chunk_fn
        self._contract = contract
        self._pending: list | None = None
        self._batch = 1
        self._capacity = 1

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._capacity = max(min(outbox.capacities, default=2048), 1)
        self._batch = self._capacity

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self._pending is not None:
            if not self.outbox.offer_chunk(self._pending):
                return
            self._pending = None
        chunk = inbox.take_chunk(self._batch)
        try:
            out = self._chunk_fn(chunk)
        except Exception as error:
            broken = self._contract.broken_by(chunk, error) if self._contract is not None else None
            if broken is None:
                raise
            raise broken from None
        produced, capacity = len(out), self._capacity
        if produced > capacity:
            self._batch = max(1, self._batch * capacity // produced)
        elif produced * 2 < capacity and self._batch < capacity and len(chunk) == self._batch:
            self._batch = min(capacity, self._batch * 2)
        if out and not self.outbox.offer_chunk(out):
            self._pending = out

    def complete(self) -> bool:
        if self._pending is not None:
            if not self.outbox.offer_chunk(self._pending):
                return False
            self._pending = None
        return True


def map_p(fn: Callable[[Any], Any]) -> Supplier:
    """Emits ``fn(item)`` for each item."""
    return fused_p([("map", fn)])


def filter_p(fn: Callable[[Any], Any]) -> Supplier:
    """Emits the items for which ``fn(item)`` is truthy."""
    return fused_p([("filter", fn)])


def flat_map_p(fn: Callable[[Any], Iterable[Any]]) -> Supplier:
    """Emits every item of the iterable ``fn(item)``."""
    return fused_p([("flat_map", fn)])


def fused_p(steps: Sequence[tuple[str, Callable[[Any], Any]]],
            stage_names: Sequence[str] | None = None) -> Supplier:
    """A chain of ("map" | "filter" | "flat_map", fn) steps run as one processor.

    ``stage_names`` (one per step) name the steps in the error of a function that breaks its
    stage's contract."""
    chunk_fn = compile_chain(steps)
    contract = ChainContract(steps, stage_names)
    return lambda: TransformP(chunk_fn, contract)


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

    def complete(self) -> bool:
        if self._entries is None:
            finish = self._aggregate.finish
            self._entries = [(key, finish(acc)) for key, acc in self._accumulators.items()]
            self._accumulators = {}
        return self.emit_list(self._entries)


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


class BlockSourceP(ChunkEmittingProcessor):
    """A source emitting the lists that :meth:`blocks` yields, one list per call at most.

    Subclasses implement ``blocks()`` as a generator; it is started in ``init`` (so it sees the
    context) and closed with the processor, so a ``with open(...)`` inside it is closed too.
    """

    _blocks: Iterator[list] | None = None
    _block: list | None = None

    def blocks(self) -> Iterator[list]:
        raise NotImplementedError

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._blocks = self.blocks()

    def complete(self) -> bool:
        if self._block is None:
            self._block = next(self._blocks, None)
            if self._block is None:
                return True
        if self.emit_list(self._block):
            self._block = None
        return False

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()


class ItemsSourceP(BlockSourceP):
    """Emits its share of a collection: processor g of N takes items g, g+N, g+2N, ...

    Every processor of the vertex in the cluster gets a disjoint share, so each item is
    emitted exactly once.
    """

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items

    def blocks(self) -> Iterator[list]:
        context = self.context
        start, step = context.global_index, context.total_parallelism
        if isinstance(self._items, Sequence):
            share = iter(self._items[start::step])
        else:
            share = islice(self._items, start, None, step)
        capacity = max(min(self.outbox.capacities, default=2048), 1)
        while block := list(islice(share, capacity)):
            yield block


def items_source_p(items: Iterable[Any]) -> Supplier:
    """A source of the given items, split across all of the vertex's processors."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"items_source_p needs an iterable of items, got {type(items).__name__}")
    if not isinstance(items, Sequence):
        items = list(items)
    return lambda: ItemsSourceP(items)


class ListSinkP(Processor):
    """Appends every item it receives to a list in this process."""

    def __init__(self, target: list) -> None:
        self._target = target

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._target.extend(inbox.take_chunk())


def list_sink_p(target_list: list) -> Supplier:
    """A sink that appends every item to ``target_list`` (of this process)."""
    if not isinstance(target_list, list):
        raise TypeError(f"list_sink_p needs a list, got {type(target_list).__name__}")
    return lambda: ListSinkP(target_list)


class LoggerSinkP(Processor):
    """Logs every item at INFO on the processor's logger."""

    def __init__(self, format_fn: Callable[[Any], str]) -> None:
        self._format = format_fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        logger = self.context.logger
        if logger.isEnabledFor(logging.INFO):
            for item in inbox.take_chunk():
                logger.info("%s", self._format(item))
        else:
            inbox.clear()


def logger_sink_p(format_fn: Callable[[Any], str] = str) -> Supplier:
    """A sink that logs each item (formatted by ``format_fn``) at INFO level."""
    return lambda: LoggerSinkP(format_fn)


class NoopP(Processor):
    """Consumes everything and emits nothing."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()


def noop_p() -> Supplier:
    """A processor that swallows its input."""
    return NoopP
