"""Edges of the DAG: which ordinals they connect, how items are routed, and their tuning."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

from jet.core.partitioner import DEFAULT_PARTITIONER, Partitioner


class Vertex(Protocol):
    """What an edge needs of its ends (:class:`jet.core.dag.Vertex` is one): its name."""

    name: str

DEFAULT_QUEUE_SIZE = 16384
"""Jet's is 1024 items. Here a queue holds whole chunks: at twice the outbox capacity a full
bucket lands in one piece even when the queue is half full, and a consumer takes a queue's worth
per call, so the engine's cost per call is spread over many more items (bench/README.md)."""
DEFAULT_OUTBOX_CAPACITY = 8192
"""Jet's is 2048: here a processor's call and the hand-over of its bucket cost Python calls per
chunk, and bigger chunks move the same items in fewer of them."""
DEFAULT_PACKET_SIZE_LIMIT_BYTES = 16384
DEFAULT_RECEIVE_WINDOW_MULTIPLIER = 3


@dataclass(frozen=True)
class EdgeConfig:
    """Tuning of one edge, with Jet's defaults but larger queues and buckets (see
    :data:`DEFAULT_QUEUE_SIZE` and :data:`DEFAULT_OUTBOX_CAPACITY`).

    queue_size: items a local queue between two processors holds before it refuses more.
    outbox_capacity: items a processor may have in its outbox bucket for this edge.
    packet_size_limit: bytes of items a network packet collects before it is sent (one item
        may overshoot, as in Jet).
    receive_window_multiplier: how many flow-control periods' worth of data a sender may have
        in flight on a distributed edge.
    """

    queue_size: int = DEFAULT_QUEUE_SIZE
    outbox_capacity: int = DEFAULT_OUTBOX_CAPACITY
    packet_size_limit: int = DEFAULT_PACKET_SIZE_LIMIT_BYTES
    receive_window_multiplier: int = DEFAULT_RECEIVE_WINDOW_MULTIPLIER

    def __post_init__(self) -> None:
        for field_name in ("queue_size", "outbox_capacity", "packet_size_limit",
                           "receive_window_multiplier"):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"EdgeConfig.{field_name} must be a positive integer, got {value!r}")

    def with_changes(self, **changes: int) -> "EdgeConfig":
        """A copy of this config with the given fields replaced."""
        return replace(self, **changes)


class RoutingPolicy(enum.Enum):
    """How an edge chooses the downstream processor of each item."""

    UNICAST = "unicast"
    """Each item goes to exactly one processor, spread round-robin; a full queue is skipped."""
    ISOLATED = "isolated"
    """Fixed 1:1 pipes between upstream and downstream processors (order preserving)."""
    BROADCAST = "broadcast"
    """Each item goes to every downstream processor."""
    PARTITIONED = "partitioned"
    """Each item goes to the processor that owns the partition of its key."""


class Edge:
    """A connection from an output ordinal of one vertex to an input ordinal of another.

    Build one with ``Edge.between(a, b)`` or ``Edge.from_(a, 1).to(b, 2)`` and chain the
    routing and tuning methods, each of which returns the edge::

        Edge.between(tokenize, count).partitioned(lambda w: w).distributed()
    """

    def __init__(self, source: "Vertex", source_ordinal: int = 0,
                 dest: "Vertex | None" = None, dest_ordinal: int = 0) -> None:
        self.source = source
        self.source_ordinal = _check_ordinal(source_ordinal, "source")
        self.dest = dest
        self.dest_ordinal = _check_ordinal(dest_ordinal, "destination")
        self.routing_policy = RoutingPolicy.UNICAST
        self.key_fn: Callable[[Any], Any] | None = None
        self.partitioner: Partitioner | None = None
        self.all_to_one_key: Any = None
        self.config: EdgeConfig | None = None
        self._distributed = False
        self._priority = 0
        self._buffered = False

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def between(cls, source: "Vertex", dest: "Vertex") -> "Edge":
        """An edge from ordinal 0 of ``source`` to ordinal 0 of ``dest``."""
        return cls(source, 0, dest, 0)

    @classmethod
    def from_(cls, source: "Vertex", ordinal: int = 0) -> "Edge":
        """An edge from ``ordinal`` of ``source``; complete it with :meth:`to`."""
        return cls(source, ordinal)

    def to(self, dest: "Vertex", ordinal: int = 0) -> "Edge":
        """Set the destination vertex and its input ordinal."""
        if self.dest is not None:
            raise ValueError(f"edge from {self.source.name!r} already goes to {self.dest.name!r}")
        self.dest = dest
        self.dest_ordinal = _check_ordinal(ordinal, "destination")
        return self

    # -- routing --------------------------------------------------------------------------
    def unicast(self) -> "Edge":
        """Route each item to one processor, round-robin (the default)."""
        return self._route(RoutingPolicy.UNICAST)

    def isolated(self) -> "Edge":
        """Connect processors by fixed 1:1 pipes, preserving each upstream processor's order."""
        return self._route(RoutingPolicy.ISOLATED)

    def broadcast(self) -> "Edge":
        """Route each item to every downstream processor."""
        return self._route(RoutingPolicy.BROADCAST)

    def partitioned(self, key_fn: Callable[[Any], Any],
                    partitioner: Partitioner | None = None) -> "Edge":
        """Route each item to the processor owning the partition of ``key_fn(item)``.

        The default partitioner is stable across processes (MurmurHash3 over a canonical
        encoding of the key); ``HASH_PARTITIONER`` is faster but only valid on local edges.
        """
        if not callable(key_fn):
            raise TypeError(f"partitioned() needs a callable key_fn, got {key_fn!r}")
        self._route(RoutingPolicy.PARTITIONED)
        self.key_fn = key_fn
        self.partitioner = partitioner or DEFAULT_PARTITIONER
        self.all_to_one_key = None
        return self

    def all_to_one(self, key: Any = None) -> "Edge":
        """Route every item to the one processor owning the partition of ``key``.

        On a distributed edge that is one processor in the whole cluster. Without a key a
        random one is fixed now, as Jet does.
        """
        key = str(uuid.uuid4()) if key is None else key
        self.partitioned(lambda _item, _key=key: _key)
        self.all_to_one_key = key
        return self

    def distributed(self) -> "Edge":
        """Let items cross to processors on other members."""
        self._distributed = True
        return self

    def local(self) -> "Edge":
        """Keep items on the member that produced them (the default)."""
        self._distributed = False
        return self

    def priority(self, priority: int) -> "Edge":
        """Lower priorities are consumed fully before higher ones are read at all."""
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"edge priority must be an int, got {priority!r}")
        self._priority = priority
        return self

    def buffered(self) -> "Edge":
        """Make this edge's buffering unbounded.

        Needed on the lower-priority branch of a fork that rejoins over edges of different
        priority: without it the fork's source blocks on that branch and the higher-priority
        branch never completes.
        """
        self._buffered = True
        return self

    def set_config(self, config: EdgeConfig) -> "Edge":
        """Override the member's default :class:`EdgeConfig` for this edge."""
        if not isinstance(config, EdgeConfig):
            raise TypeError(f"set_config() needs an EdgeConfig, got {config!r}")
        self.config = config
        return self

    # -- reading ----------------------------------------------------------------------------
    def get_priority(self) -> int:
        return self._priority

    def is_distributed(self) -> bool:
        return self._distributed

    def is_buffered(self) -> bool:
        return self._buffered

    @property
    def source_name(self) -> str:
        return self.source.name

    @property
    def dest_name(self) -> str | None:
        return self.dest.name if self.dest is not None else None

    def label(self) -> str:
        """Jet's DOT label: ``distributed`` and the policy joined by ``-``; empty for local unicast."""
        parts = []
        if self._distributed:
            parts.append("distributed")
        if self.routing_policy is not RoutingPolicy.UNICAST:
            parts.append(self.routing_policy.value)
        return "-".join(parts)

    def _route(self, policy: RoutingPolicy) -> "Edge":
        self.routing_policy = policy
        if policy is not RoutingPolicy.PARTITIONED:
            self.key_fn = None
            self.partitioner = None
            self.all_to_one_key = None
        return self

    def __repr__(self) -> str:
        dest = self.dest.name if self.dest is not None else "?"
        label = self.label() or "unicast"
        return (f"Edge({self.source.name!r}:{self.source_ordinal} -> {dest!r}:{self.dest_ordinal},"
                f" {label}, priority={self._priority})")


def _check_ordinal(ordinal: int, side: str) -> int:
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0:
        raise ValueError(f"the {side} ordinal of an edge must be an int >= 0, got {ordinal!r}")
    return ordinal
