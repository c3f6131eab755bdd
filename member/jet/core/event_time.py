"""Event time at sources: Jet's EventTimePolicy (how a source stamps items and makes watermarks).

A *timestamped item* is a plain 2-tuple ``(timestamp_ms, item)``. Between the vertex that
assigns timestamps (a source applying this policy, or ``insert_watermarks_p``) and the vertex
that consumes them (windows, stateful mapping, a sink stage's unwrapping step), every item of
a stream stage is such a pair; batch stages never carry timestamps, so their hot path does
not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: Jet's default time after which a source partition without events stops holding the watermark back.
DEFAULT_IDLE_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class EventTimePolicy:
    """How a source (or the inserted watermark vertex) assigns timestamps and emits watermarks.

    - ``timestamp_fn(item) -> int`` (epoch ms); None means the source's native timestamp.
    - ``allowed_lag_ms``: Jet's limiting lag, watermark = max(watermark, top timestamp - lag).
    - ``ingestion``: the timestamp is the wall clock at the source and the watermark follows the
      wall clock minus the lag even without events (Jet 4.3's limitingRealTimeLag).
    - ``idle_timeout_ms``: a partition without events for this long stops holding the watermark
      back (0 disables idleness).
    - ``frame_size_ms`` / ``frame_offset_ms``: watermark throttling; an emitted watermark is
      floored to a frame boundary, so a stream costs one watermark per frame, not per item.
      Size 0 suppresses watermarks altogether (as in Jet); the planner sets the size.
    """

    timestamp_fn: Callable[[Any], int] | None = None
    allowed_lag_ms: int = 0
    ingestion: bool = False
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    frame_size_ms: int = 1
    frame_offset_ms: int = 0
