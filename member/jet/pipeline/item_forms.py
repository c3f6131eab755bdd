"""Which stages carry timestamped ``(timestamp, item)`` pairs and which bare items (pure
functions of the pipeline's stages, read by the planner)."""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter
from typing import Any, Callable

from jet.core.functions import whole_item
from jet.core.special_items import MIN_TIMESTAMP
from jet.pipeline.transforms import STATEFUL_KINDS, Transform

_item_of = itemgetter(1)


def pairs_out(transform: Transform) -> bool:
    """Whether the stage's items are (timestamp, item) pairs."""
    kind = transform.kind
    if kind == "source":
        return transform.event_time_policy is not None
    if kind in ("add_timestamps", "window_aggregate", "window_co_aggregate", "interval_join") \
            or kind in STATEFUL_KINDS:
        return True
    if kind in ("aggregate", "group_aggregate", "co_aggregate", "sink", "sort"):
        return False
    if kind == "merge":
        return any(pairs_out(source.transform) for source in transform.inputs)
    return pairs_out(transform.inputs[0].transform)

def input_needs_pairs(transform: Transform, index: int) -> bool | None:
    """Whether input ``index`` of the stage must be pairs (True), bare (False) or either."""
    kind = transform.kind
    if kind in ("window_aggregate", "window_co_aggregate", "interval_join") or kind in STATEFUL_KINDS:
        return True
    if kind == "merge":
        return pairs_out(transform)
    if kind in ("hash_join", "hash_join_n"):
        return None if index == 0 else False
    if kind in ("map", "filter", "flat_map", "peek") or "_using_service" in kind:
        return None
    return False

def chain_output_pairs(last: Transform, pairs_in: bool) -> bool:
    """What a chain ending in ``last`` should emit: what its only consumer needs, if any."""
    if len(last.downstream) == 1:
        consumer = last.downstream[0]
        index = next(i for i, source in enumerate(consumer.inputs) if source.transform is last)
        needed = input_needs_pairs(consumer, index)
        if needed is not None:
            return needed
    return pairs_in


def unwrap_chunk(chunk: list) -> list:
    """The items of a chunk of timestamped pairs."""
    return list(map(_item_of, chunk))


def wrap_chunk(chunk: list) -> list:
    """A chunk of bare items as pairs without event time (MIN_TIMESTAMP)."""
    return list(zip(repeat(MIN_TIMESTAMP), chunk))


def key_of_pair(key_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``key_fn`` applied to the item of a timestamped pair (no extra call for ``whole_item``).

    The function returned carries ``key_fn`` as its ``item_key``, so that a collector keying a
    whole chunk can map ``key_fn`` over the items without a Python call per pair."""
    if key_fn is whole_item:
        return _item_of

    def key_of(pair: Any) -> Any:
        return key_fn(pair[1])
    key_of.item_key = key_fn  # type: ignore[attr-defined]
    return key_of
