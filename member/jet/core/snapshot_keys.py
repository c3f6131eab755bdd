"""Keys of snapshot entries: a plain key is restored where its partition is owned; a
:class:`BroadcastKey` reaches every processor of the vertex (Jet's ``broadcastKey``)."""

from __future__ import annotations

from typing import Any, NamedTuple


class BroadcastKey:
    """A snapshot key whose entry is restored to every processor of the vertex, on every member.

    Use it for state that is not keyed by the vertex's partitioning key: a source's offsets
    (saved under its global processor index; each processor keeps its share at restore), a
    processor's watermark or window progress (merged by minimum), transaction ids.
    """

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __eq__(self, other: object) -> bool:
        return type(other) is BroadcastKey and other.key == self.key

    def __hash__(self) -> int:
        return hash(("BroadcastKey", self.key))

    def __reduce__(self):
        return (BroadcastKey, (self.key,))

    def __repr__(self) -> str:
        return f"BroadcastKey({self.key!r})"


class ProcessorEnded(NamedTuple):
    """The engine's own snapshot key: processor ``global_index`` of ``total_parallelism`` had
    finished (emitted DONE) when the snapshot was taken. Never reaches a processor: at restore
    its successor starts finished instead of doing that work again."""

    global_index: int
    total_parallelism: int


def broadcast_key(key: Any) -> BroadcastKey:
    """Jet's ``broadcastKey(key)``."""
    return BroadcastKey(key)
