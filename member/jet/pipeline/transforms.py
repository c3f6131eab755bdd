"""The nodes of a pipeline: one Transform per stage, joined to their upstream transforms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from jet.core.aggregate import AggregateOperation

STATELESS_KINDS = ("map", "filter", "flat_map", "peek")

#: Jet's default stage names, by kind.
DEFAULT_NAMES = {
    "map": "map", "filter": "filter", "flat_map": "flat-map", "peek": "peek",
    "group_aggregate": "group-and-aggregate", "aggregate": "aggregate",
    "hash_join": "hash-join", "merge": "merge",
}


@dataclass(eq=False)
class Input:
    """One input of a transform: the upstream transform and how the edge is routed."""

    transform: "Transform"
    rebalance: bool = False
    rebalance_key: Callable[[Any], Any] | None = None


@dataclass(eq=False)
class Transform:
    """One stage of a pipeline. ``kind`` is source, map, filter, flat_map, peek,
    group_aggregate, aggregate, hash_join, merge or sink."""

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

    def __post_init__(self) -> None:
        if not self.name:
            self.name = self.connector.name if self.connector is not None else DEFAULT_NAMES[self.kind]
        for source in self.inputs:
            source.transform.downstream.append(self)

    @property
    def is_stateless(self) -> bool:
        return self.kind in STATELESS_KINDS

    def __repr__(self) -> str:
        return f"Transform({self.kind}, {self.name!r})"
