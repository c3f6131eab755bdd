"""The nodes of a pipeline: one Transform per stage, joined to their upstream transforms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from jet.core.aggregate import AggregateOperation
from jet.core.event_time import EventTimePolicy

STATELESS_KINDS = ("map", "filter", "flat_map", "peek")
#: Kinds that fuse into one vertex with the stateless stages next to them.
CHAINABLE_KINDS = STATELESS_KINDS + ("map_batches",)
STATEFUL_KINDS = ("map_stateful", "filter_stateful", "flat_map_stateful")

#: Jet's default stage names, by kind (stateful and window stages name themselves).
DEFAULT_NAMES = {
    "map": "map", "filter": "filter", "flat_map": "flat-map", "peek": "peek",
    "group_aggregate": "group-and-aggregate", "aggregate": "aggregate",
    "hash_join": "hash-join", "merge": "merge", "add_timestamps": "add-timestamps",
    "map_batches": "map-batches",
}


class TransformGraph(Protocol):
    """What a stage needs of its pipeline: a place to add the transforms it creates."""

    def _add(self, transform: "Transform") -> None: ...


@dataclass(eq=False)
class Input:
    """One input of a transform: the upstream transform and how the edge is routed."""

    transform: "Transform"
    rebalance: bool = False
    rebalance_key: Callable[[Any], Any] | None = None


@dataclass(eq=False)
class Transform:
    """One stage of a pipeline. ``kind`` is source, map, filter, flat_map, peek, map_batches,
    group_aggregate, aggregate, hash_join, merge, sink, or for streams add_timestamps,
    window_aggregate, map_stateful, filter_stateful, flat_map_stateful; ``*_using_service(_async)``
    and sort (``enrichment_stages``); stages of several
    inputs (``co_group.CO_GROUP_KINDS``) keep their key functions in ``co_group``.

    ``stream`` says the stage's output is unbounded, ``timestamped`` that its items have event
    time (they travel as ``(timestamp, item)`` pairs). A stream source stage has ``stream`` set
    and ``timestamps_chosen`` once one of its ``with_*`` methods was called; its
    ``event_time_policy`` is None without timestamps.
    """

    kind: str
    inputs: list[Input]
    name: str = ""
    local_parallelism: int = -1
    fn: Callable[..., Any] | None = None
    key_fn: Callable[[Any], Any] | None = None
    other_key_fn: Callable[[Any], Any] | None = None
    operation: AggregateOperation | None = None
    connector: Any = None
    downstream: list["Transform"] = field(default_factory=list)
    pipeline: Any = None
    stream: bool = False
    timestamped: bool = False
    timestamps_chosen: bool = False
    event_time_policy: EventTimePolicy | None = None
    window: Any = None
    ttl_ms: int = 0
    create_fn: Callable[[], Any] | None = None
    on_evict_fn: Callable[..., Any] | None = None
    batch_format: str = "arrow"  # map_batches: what fn takes ("arrow" or "pandas")
    schema: Any = None  # map_batches: the schema of the batches built from rows
    as_dicts: bool = False  # map_batches: rows out of its batches are dicts, not tuples
    spec: Any = None  # services and sort: their settings (see enrichment_stages)
    co_group: Any = None  # stages of several inputs: a co_group.CoGroupSpec

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.connector.name if self.connector is not None else DEFAULT_NAMES[self.kind]
        for source in self.inputs:
            source.transform.downstream.append(self)

    @property
    def is_stateless(self) -> bool:
        return self.kind in STATELESS_KINDS

    @property
    def is_chainable(self) -> bool:
        """Whether the stage fuses with the stateless stages next to it (map_batches does)."""
        return self.kind in CHAINABLE_KINDS

    def __repr__(self) -> str:
        return f"Transform({self.kind}, {self.name!r})"
