"""Source and sink descriptors: what a pipeline stage needs to become a vertex (the connectors in
:mod:`jet.connectors` make them; the planner reads them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from jet.core.event_time import DEFAULT_IDLE_TIMEOUT_MS, EventTimePolicy
from jet.core.processor import Processor


@dataclass(frozen=True)
class Source:
    """A batch source: a name for its vertex, a processor supplier and how parallel it is.

    ``preflight`` runs when the job is submitted and raises a clear error (naming the path
    or option) when the source cannot be opened, so a bad source fails before anything runs.
    """

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int = 1
    preflight: Callable[[], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Sink:
    """A sink: a name for its vertex, a processor supplier and how parallel it is."""

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int = 1
    preflight: Callable[[], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class StreamSource(Source):
    """An unbounded source. ``Pipeline.read_from`` gives a ``StreamSourceStage`` for it.

    ``policy_supplier(policy)``, when present, is a processor supplier that applies the event-time
    policy itself: it emits timestamped pairs ``(ts, item)`` and watermarks, one watermark
    tracker per source partition (connectors and ``SourceBuilder.timestamped_stream`` do).
    Without it the source emits plain items and the planner adds an ``<name>-add-timestamps``
    vertex. ``native_timestamps`` says whether ``with_native_timestamps`` is allowed (the
    source then has its own timestamp for each item); ``partition_idle_timeout_ms`` is the idle
    timeout its event-time policies get.
    """

    policy_supplier: Callable[[EventTimePolicy | None], Callable[[], Processor]] | None = \
        field(default=None, compare=False)
    native_timestamps: bool = False
    partition_idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS

    def set_partition_idle_timeout(self, timeout_ms: int) -> "StreamSource":
        """Jet's ``setPartitionIdleTimeout``: a source partition without events for
        ``timeout_ms`` stops holding the watermark back (0: never idle). Returns this source."""
        if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms < 0:
            raise ValueError(f"{self.name}: the partition idle timeout must be an int of ms >= 0,"
                             f" got {timeout_ms!r}")
        object.__setattr__(self, "partition_idle_timeout_ms", timeout_ms)  # Jet's setter mutates
        return self
