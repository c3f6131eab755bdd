"""Stream stages: a stream source's timestamp choice, then the stages of an unbounded stream.

``Pipeline.read_from(stream_source)`` gives a :class:`StreamSourceStage`; one of its ``with_*``
methods says where event time comes from and gives a :class:`StreamStage`. Items of a stream
with timestamps travel as ``(timestamp, item)`` pairs between the vertices; the user's functions
only ever see the item.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.event_time import EventTimePolicy
from jet.pipeline.errors import PipelineDefinitionError, require_callable
from jet.pipeline.stages import GeneralStage, Stage, StageWithKey

__all__ = ["StreamSourceStage", "StreamStage", "StreamStageWithKey"]


class StreamStage(GeneralStage):
    """A stage of an unbounded stream: stateless transforms, windows, stateful mapping, joins
    with batch stages. Aggregations need a window (``window(...).aggregate(op)``)."""

    def _keyed(self, key_fn: Callable[[Any], Any]) -> "StreamStageWithKey":
        return StreamStageWithKey(self, key_fn)

    def add_timestamps(self, timestamp_fn: Callable[[Any], int], allowed_lag_ms: int) -> "StreamStage":
        """Give a stream without timestamps event time ``timestamp_fn(item)`` (epoch ms) and
        watermarks that trail the highest timestamp by ``allowed_lag_ms``."""
        require_callable(timestamp_fn, "add-timestamps", "the timestamp function")
        _require_lag(allowed_lag_ms, "add-timestamps")
        policy = EventTimePolicy(timestamp_fn=timestamp_fn, allowed_lag_ms=allowed_lag_ms)
        return self._add("add_timestamps", [self._input()], event_time_policy=policy,
                         timestamped=True)


class StreamStageWithKey(StageWithKey):
    """A stream stage grouped by a key: keyed windows and keyed stateful mapping."""


class StreamSourceStage(Stage):
    """The stage of a stream source: choose where event time comes from with one of
    :meth:`with_timestamps`, :meth:`with_native_timestamps`, :meth:`with_ingestion_timestamps`
    or :meth:`without_timestamps`."""

    @property
    def _source(self) -> Any:
        return self._transform.connector

    def _choose(self, policy: EventTimePolicy | None, method: str) -> StreamStage:
        transform = self._transform
        if transform.timestamps_chosen:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: timestamps were already chosen for this source;"
                f" call {method} once, on a fresh read_from")
        transform.timestamps_chosen = True
        transform.event_time_policy = policy
        transform.timestamped = policy is not None
        return StreamStage(self._pipeline, transform)

    def _policy(self, **fields: Any) -> EventTimePolicy:
        # Throttling is the planner's choice (it depends on the windows downstream).
        return EventTimePolicy(idle_timeout_ms=self._source.partition_idle_timeout_ms, **fields)

    def with_timestamps(self, timestamp_fn: Callable[[Any], int], allowed_lag_ms: int) -> StreamStage:
        """Event time is ``timestamp_fn(item)`` (epoch ms); watermarks trail the highest
        timestamp seen by ``allowed_lag_ms`` (events further behind may be late)."""
        require_callable(timestamp_fn, self.name, "the timestamp function")
        _require_lag(allowed_lag_ms, self.name)
        return self._choose(self._policy(timestamp_fn=timestamp_fn, allowed_lag_ms=allowed_lag_ms),
                            "with_timestamps")

    def with_native_timestamps(self, allowed_lag_ms: int) -> StreamStage:
        """Event time is the source's own timestamp of each item (only for sources that have
        one, such as ``Sources.item_stream``)."""
        if not self._source.native_timestamps or self._source.policy_supplier is None:
            raise PipelineDefinitionError(
                f"stage {self.name!r}: source {self._source.name!r} has no native timestamps;"
                " use with_timestamps(fn, allowed_lag_ms) or with_ingestion_timestamps()")
        _require_lag(allowed_lag_ms, self.name)
        return self._choose(self._policy(allowed_lag_ms=allowed_lag_ms), "with_native_timestamps")

    def with_ingestion_timestamps(self) -> StreamStage:
        """Event time is the wall clock when the source emits the item; the watermark follows
        the wall clock even while no events come."""
        return self._choose(self._policy(ingestion=True), "with_ingestion_timestamps")

    def without_timestamps(self) -> StreamStage:
        """No event time: windows and stateful mapping with a TTL are not possible downstream
        (``add_timestamps`` can add event time later)."""
        return self._choose(None, "without_timestamps")

    def __getattr__(self, name: str) -> Any:
        # Only for what the class lacks: a stream stage's operation asked of the source before
        # its timestamps were chosen gets the four ways to choose them, not a bare AttributeError.
        if not name.startswith("_") and hasattr(StreamStage, name):
            raise AttributeError(
                f"stage {self.name!r} is a stream source whose timestamps were not chosen, so it has no "
                f".{name}() yet: choose them first with with_timestamps(fn, allowed_lag_ms), "
                f"with_native_timestamps(allowed_lag_ms), with_ingestion_timestamps() or without_timestamps()")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _require_lag(allowed_lag_ms: Any, stage: str) -> None:
    if not isinstance(allowed_lag_ms, int) or isinstance(allowed_lag_ms, bool) or allowed_lag_ms < 0:
        raise PipelineDefinitionError(
            f"stage {stage!r}: allowed_lag_ms must be an int >= 0, got {allowed_lag_ms!r}")
