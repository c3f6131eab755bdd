"""Windows over several inputs (Jet's co-grouping): each input ordinal has its own key function
and is folded into one keyed accumulation by ``CoAggregateOperation.for_input(ordinal)``.

The processors are the single-input window processors with one change: before a chunk of input
``i`` is folded, the key function and the operation become input ``i``'s. Everything else (frames,
late events, watermarks, snapshots keyed by the grouping key) is theirs, since an input's view
shares create, combine, deduct and finish with the whole operation; the second stage of two
combines whole accumulators as the single-input one does.

Parts of a co-aggregation may fold in place (``to_list`` does, and the window join is built on
it); a save needs no copy of them, since the tasklet pickles what was offered before the
processor runs again.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from jet.core.co_aggregate import CoAggregateOperation
from jet.core.inbox import Inbox
from jet.core.processors.base import Supplier
from jet.core.processors.session_window import SessionWindowP
from jet.core.processors.streaming import monotonic_ms
from jet.core.processors.windows import ACCUMULATE_BY_FRAME, AGGREGATE_TO_WINDOW, COMBINE_TO_WINDOW, SlidingWindowP
from jet.core.sliding_window_policy import SlidingWindowPolicy


class _PerInput:
    """Which key function and operation fold each input ordinal."""

    def __init__(self, key_fns: Sequence[Callable[[Any], Any]] | None,
                 aggregate: CoAggregateOperation) -> None:
        self.key_fns = None if key_fns is None else tuple(key_fns)
        self.views = tuple(aggregate.for_input(i) for i in range(aggregate.arity))

    def key_fn(self, ordinal: int) -> Callable[[Any], Any] | None:
        return None if self.key_fns is None else self.key_fns[ordinal]


def _first(key_fns: Sequence[Callable[[Any], Any]] | None) -> Callable[[Any], Any] | None:
    return None if key_fns is None else key_fns[0]


class CoGroupSlidingWindowP(SlidingWindowP):
    """Sliding or tumbling windows over several inputs: the first stage of two
    (``accumulate-by-frame``) or a single stage (``aggregate-to-window``)."""

    def __init__(self, kind: str, key_fns: Sequence[Callable[[Any], Any]] | None,
                 window_policy: SlidingWindowPolicy, aggregate: CoAggregateOperation,
                 early_results_period_ms: int = 0, clock_ms: Callable[[], int] = monotonic_ms) -> None:
        super().__init__(kind, _first(key_fns), window_policy, aggregate, keyed=key_fns is not None,
                         early_results_period_ms=early_results_period_ms, clock_ms=clock_ms)
        self._inputs = _PerInput(key_fns, aggregate)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._key_fn = self._inputs.key_fn(ordinal)
        self._aggregate = self._inputs.views[ordinal]
        super().process(ordinal, inbox)


class CoGroupSessionWindowP(SessionWindowP):
    """Session windows over several inputs (one stage, partitioned by key)."""

    def __init__(self, session_timeout_ms: int, key_fns: Sequence[Callable[[Any], Any]] | None,
                 aggregate: CoAggregateOperation, early_results_period_ms: int = 0,
                 clock_ms: Callable[[], int] = monotonic_ms) -> None:
        super().__init__(session_timeout_ms, _first(key_fns), aggregate, early_results_period_ms, clock_ms)
        self._inputs = _PerInput(key_fns, aggregate)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        # Outside process the base class only asks whether _key_fn is None (keyed or not),
        # which any input's key function answers alike.
        self._key_fn = self._inputs.key_fn(ordinal)
        self._aggregate = self._inputs.views[ordinal]
        super().process(ordinal, inbox)


def _check(where: str, aggregate: Any, key_fns: Any) -> None:
    if not isinstance(aggregate, CoAggregateOperation):
        raise TypeError(f"{where}: aggregate must be a CoAggregateOperation"
                        f" (AggregateOperations.aggregate_operation2/3, co_aggregate_builder), got {aggregate!r}")
    if key_fns is not None:
        if len(key_fns) != aggregate.arity:
            raise ValueError(f"{where}: {len(key_fns)} key functions for {aggregate.arity} inputs")
        for position, key_fn in enumerate(key_fns):
            if not callable(key_fn):
                raise TypeError(f"{where}: key function {position} must be callable, got {key_fn!r}")


def co_accumulate_by_frame_p(key_fns: Sequence[Callable[[Any], Any]] | None,
                             window_policy: SlidingWindowPolicy,
                             aggregate: CoAggregateOperation) -> Supplier:
    """Stage one over several inputs: ``(ts, item)`` pairs on ordinal ``i`` folded by key
    ``key_fns[i]``; emits per (frame, key) a ``(key, frame end, accumulator list)`` partial,
    for ``combine_to_sliding_window_p(window_policy, aggregate)``."""
    _check("co_accumulate_by_frame_p", aggregate, key_fns)
    return lambda: CoGroupSlidingWindowP(ACCUMULATE_BY_FRAME, key_fns, window_policy, aggregate)


def co_combine_to_sliding_window_p(window_policy: SlidingWindowPolicy, aggregate: CoAggregateOperation,
                                   keyed: bool = True) -> Supplier:
    """Stage two over several inputs: ``combine_to_sliding_window_p`` with a co-aggregation's
    checks."""
    _check("co_combine_to_sliding_window_p", aggregate, None)
    if aggregate.combine is None:
        raise ValueError(f"co_combine_to_sliding_window_p: {aggregate.name!r} has no combine function")
    return lambda: SlidingWindowP(COMBINE_TO_WINDOW, None, window_policy, aggregate, keyed=keyed)


def co_aggregate_to_sliding_window_p(key_fns: Sequence[Callable[[Any], Any]] | None,
                                     window_policy: SlidingWindowPolicy,
                                     aggregate: CoAggregateOperation,
                                     early_results_period_ms: int = 0,
                                     clock_ms: Callable[[], int] = monotonic_ms) -> Supplier:
    """Single stage over several inputs: window result pairs out, as
    ``aggregate_to_sliding_window_p`` emits them."""
    _check("co_aggregate_to_sliding_window_p", aggregate, key_fns)
    if aggregate.combine is None and not window_policy.is_tumbling():
        raise ValueError(f"co_aggregate_to_sliding_window_p: {aggregate.name!r} has no combine function,"
                         " which a sliding window needs")
    return lambda: CoGroupSlidingWindowP(AGGREGATE_TO_WINDOW, key_fns, window_policy, aggregate,
                                         early_results_period_ms, clock_ms)


def co_aggregate_to_session_window_p(session_timeout_ms: int,
                                     key_fns: Sequence[Callable[[Any], Any]] | None,
                                     aggregate: CoAggregateOperation,
                                     early_results_period_ms: int = 0,
                                     clock_ms: Callable[[], int] = monotonic_ms) -> Supplier:
    """Session windows over several inputs: ``(end - 1, KeyedWindowResult)`` pairs out."""
    _check("co_aggregate_to_session_window_p", aggregate, key_fns)
    if not isinstance(session_timeout_ms, int) or session_timeout_ms <= 0:
        raise ValueError(f"co_aggregate_to_session_window_p: session_timeout_ms must be an int > 0,"
                         f" got {session_timeout_ms!r}")
    if aggregate.combine is None:
        raise ValueError(f"co_aggregate_to_session_window_p: {aggregate.name!r} has no combine"
                         " function, which merging sessions needs")
    return lambda: CoGroupSessionWindowP(session_timeout_ms, key_fns, aggregate,
                                         early_results_period_ms, clock_ms)
