"""``Sinks.observable(name)``: results a client follows as they come, with ``job.observable(name)``.

The sink processor (one per member by default) hands each batch it receives to its member's
publisher (:mod:`jet.cluster.executions.observables`), which stores it in member 0's buffer for the job;
the call returns when member 0 has it, so everything is there before the sink completes.
"""

from __future__ import annotations

from jet.cluster.executions.observables import DEFAULT_OBSERVABLE_CAPACITY, publisher_for
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark


class ObservableSinkP(Processor):
    """Publishes every batch of items it receives; runs on a thread of its own (publishing
    from a member other than 0 is a network call)."""

    is_cooperative = False

    def __init__(self, name: str, capacity: int) -> None:
        self._name = name
        self._capacity = capacity

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._publish = publisher_for(context.job_id, context.member_index)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._publish(self._name, self._capacity, inbox.take_chunk())

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True


class ObservableSinkSupplier:
    """The sink's processor supplier; ``observable_name`` lets the coordinator know the job's
    observables (to tell a reader that asks for a name the job does not have)."""

    def __init__(self, name: str, capacity: int) -> None:
        self.observable_name = name
        self.capacity = capacity

    def __call__(self) -> ObservableSinkP:
        return ObservableSinkP(self.observable_name, self.capacity)


def check_observable_args(name: str, capacity: int) -> None:
    """Clear errors for a bad name or capacity of ``Sinks.observable``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"Sinks.observable needs a non-empty name, got {name!r}")
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        raise ValueError(f"Sinks.observable({name!r}): capacity must be an int >= 1 (items member 0 keeps), "
                         f"got {capacity!r}")


__all__ = ["DEFAULT_OBSERVABLE_CAPACITY", "ObservableSinkP", "ObservableSinkSupplier", "check_observable_args"]
