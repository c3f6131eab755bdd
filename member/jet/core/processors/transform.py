"""Stateless transforms: map, filter and flat-map steps fused into one chunk function."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any, Callable, Iterable

from jet.core.chain_contract import ChainContract
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.processors.base import ChunkFn, Supplier

_STEP_KINDS = ("map", "filter", "flat_map")
_timestamp_of = itemgetter(0)
_item_of = itemgetter(1)


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


def compile_timestamped_chain(steps: Sequence[tuple[str, Callable[[Any], Any]]],
                              unwrap: bool = False) -> ChunkFn:
    """Like :func:`compile_chain`, over a chunk of timestamped pairs ``(ts, item)``.

    The functions see only the items; every output keeps the timestamp of the item it came
    from. The output chunk holds pairs, or the bare items when ``unwrap`` is true (before a
    sink). Timestamps and items run as two aligned C-level sequences: a map maps the items, a
    filter compresses both by one list of verdicts, a flat-map repeats each timestamp as many
    times as its item gave results.
    """
    compile_chain(steps)  # the same checks of kinds and functions
    steps = tuple(steps)

    def run_timestamped_chain(chunk: list) -> list:
        timestamps: Iterable[int] = list(map(_timestamp_of, chunk))
        items: Iterable[Any] = list(map(_item_of, chunk))
        for kind, fn in steps:
            if kind == "map":
                items = map(fn, items)
            elif kind == "filter":
                items = items if type(items) is list else list(items)
                verdicts = list(map(fn, items))
                timestamps, items = compress(timestamps, verdicts), compress(items, verdicts)
            else:
                results = list(map(fn, items))
                try:
                    counts = list(map(len, results))
                except TypeError:  # iterators (generators): made into lists to count them
                    results = list(map(list, results))
                    counts = list(map(len, results))
                timestamps = chain.from_iterable(map(repeat, timestamps, counts))
                items = chain.from_iterable(results)
        return list(items) if unwrap else list(zip(timestamps, items))

    return run_timestamped_chain


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

    def try_process_watermark(self, watermark) -> bool:
        # The output of the items before the watermark must go out before it.
        return self.complete() and self.outbox.offer_watermark(watermark)

    def save_to_snapshot(self) -> bool:
        # Likewise before a snapshot barrier; nothing else to save.
        return self.complete()


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
