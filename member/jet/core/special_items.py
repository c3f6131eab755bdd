"""Items the engine sends through the data queues beside the data: DONE, watermarks, barriers.

A special item is always its own queue element, never inside a data chunk: the inbound edge
stream keeps its fast path (``type(entry) is list`` is data) and handles anything else here.
Processors never see DONE; they see watermarks through ``Processor.try_process_watermark``.
"""

from __future__ import annotations

#: The smallest and largest event timestamps (epoch milliseconds), Java's long bounds as Jet has them.
MIN_TIMESTAMP = -(1 << 63)
MAX_TIMESTAMP = (1 << 63) - 1


class SpecialItem:
    """An item the engine itself sends through the data queues (never reaches an Inbox)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: The last item every upstream processor sends on every queue it feeds.
DONE_ITEM = SpecialItem("DONE_ITEM")


class Watermark(SpecialItem):
    """Jet's watermark: no item with an event timestamp below ``timestamp`` is expected any more.

    Timestamps are epoch milliseconds. Two watermarks are equal when their timestamps are.
    ``IDLE_MESSAGE`` (timestamp ``MAX_TIMESTAMP``) tells downstream "this input has nothing to
    say, leave it out of the minimum"; processors never receive it.
    """

    __slots__ = ("timestamp",)

    def __init__(self, timestamp: int) -> None:
        self.name = "Watermark"
        self.timestamp = timestamp

    def __eq__(self, other: object) -> bool:
        return type(other) is Watermark and other.timestamp == self.timestamp

    def __hash__(self) -> int:
        return hash(("Watermark", self.timestamp))

    def __reduce__(self):
        return (Watermark, (self.timestamp,))

    def __repr__(self) -> str:
        if self.timestamp == MAX_TIMESTAMP:
            return "Watermark(IDLE)"
        return f"Watermark({self.timestamp})"


#: "This input is idle": excluded from the minimum downstream until it sends anything again.
IDLE_MESSAGE = Watermark(MAX_TIMESTAMP)


class SnapshotBarrier(SpecialItem):
    """Jet's snapshot barrier: everything before it on a queue belongs to snapshot ``snapshot_id``.

    Sources emit it after saving their state; a processor saves its state once every live input
    delivered it (exactly-once: an input that delivered it is not read until all have) and
    forwards it. A terminal barrier ends the execution after the snapshot (suspend, restart):
    processors after it are not completed, so nothing beyond the snapshot is emitted.
    """

    __slots__ = ("snapshot_id", "is_terminal")

    def __init__(self, snapshot_id: int, is_terminal: bool = False) -> None:
        self.name = "SnapshotBarrier"
        self.snapshot_id = snapshot_id
        self.is_terminal = is_terminal

    def __eq__(self, other: object) -> bool:
        return (type(other) is SnapshotBarrier and other.snapshot_id == self.snapshot_id
                and other.is_terminal == self.is_terminal)

    def __hash__(self) -> int:
        return hash(("SnapshotBarrier", self.snapshot_id, self.is_terminal))

    def __reduce__(self):
        return (SnapshotBarrier, (self.snapshot_id, self.is_terminal))

    def __repr__(self) -> str:
        return f"SnapshotBarrier({self.snapshot_id}{', terminal' if self.is_terminal else ''})"
