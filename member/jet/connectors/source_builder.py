"""Jet's SourceBuilder: a source from a few functions, for anything with a client library.

::

    source = (SourceBuilder.stream("ticks", lambda ctx: TickClient())
              .fill_buffer_fn(lambda client, buffer: [buffer.add(t) for t in client.poll()])
              .destroy_fn(lambda client: client.close())
              .build())

``create_fn(context)`` makes the source's state on each processor; ``fill_buffer_fn(state,
buffer)`` is called again and again and adds what is available now (about a hundred items, at
most about a second's work per call); ``buffer.close()`` ends the source. Without
``distributed(n)`` one processor in the whole cluster runs it; with it, ``n`` per member.
A timestamped stream's buffer takes ``add(item, timestamp_ms)`` and supports native timestamps.
When every stream source of a job has closed its buffers, the job completes like a batch job.

Fault tolerance (streams only, Jet's way): ``create_snapshot_fn(state) -> snapshot`` is called
when a snapshot is taken, after what the last fill added is in the outbox, and its result (unless
None) is saved under ``BroadcastKey(global_index)``; after a restart every processor gets
``restore_snapshot_fn(state, [snapshot of every processor that saved one])`` once, after
``create_fn``, and keeps its share. Without them a restarted stream source starts afresh.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, TypeVar

from jet.connectors.stream_emitter import StreamEmitter, wall_clock_ms
from jet.connectors.stream_sources import is_single_instance
from jet.core.event_time import EventTimePolicy
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.processors.snapshot_state import own_key, tagged, unexpected_entry
from jet.core.snapshot_keys import BroadcastKey
from jet.pipeline.source_sink import Source, StreamSource

BuilderT = TypeVar("BuilderT", bound="_SourceBuilderBase")


class SourceBuffer:
    """What ``fill_buffer_fn`` adds items to; ``close()`` says the source has no more."""

    __slots__ = ("items", "closed")

    def __init__(self) -> None:
        self.items: list = []
        self.closed = False

    def add(self, item: Any) -> None:
        """Emit ``item``."""
        self.items.append(item)

    def close(self) -> None:
        """The source is finished: what was added is emitted, then the source completes."""
        self.closed = True


class TimestampedSourceBuffer(SourceBuffer):
    """A buffer whose items carry their event time: ``add(item, timestamp_ms)``."""

    __slots__ = ("timestamps",)

    def __init__(self) -> None:
        super().__init__()
        self.timestamps: list[int] = []

    def add(self, item: Any, timestamp: int | None = None) -> None:  # type: ignore[override]
        """Emit ``item`` with its event time (epoch ms)."""
        if timestamp is None:
            raise TypeError("a timestamped stream's buffer needs add(item, timestamp_ms); the timestamp "
                            "is missing")
        self.items.append(item)
        self.timestamps.append(timestamp)


class ConvenientSourceP(Processor):
    """Runs a builder's functions (Jet's ConvenientSourceP): non-cooperative, each call fills the
    buffer once and emits what it got; completes when the buffer is closed."""

    is_cooperative = False

    def __init__(self, spec: "_SourceSpec", policy: EventTimePolicy | None) -> None:
        self._spec = spec
        self._policy = policy
        self._state: Any = None
        self._created = False
        self._closed = False
        self._restored_snapshots: list | None = None
        self._restored_watermarks: list = []

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        spec = self._spec
        self._emitter = StreamEmitter(self._policy)
        if not spec.distributed and not is_single_instance(context):
            self._closed = True
            return
        self._state = spec.create_fn(context)
        self._created = True

    def complete(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox):
            return False
        if self._closed:
            return True
        spec = self._spec
        buffer = TimestampedSourceBuffer() if spec.timestamped else SourceBuffer()
        spec.fill_buffer_fn(self._state, buffer)
        self._closed = buffer.closed
        now_ms = wall_clock_ms() if emitter.timestamped else 0
        if buffer.items:
            emitter.add(buffer.items, 0, now_ms, buffer.timestamps if spec.timestamped else None)
        elif not buffer.closed:
            emitter.idle(now_ms)
        return emitter.flush(self.outbox) and self._closed

    def save_to_snapshot(self) -> bool:
        emitter = self._emitter
        if not emitter.flush(self.outbox) or self.outbox.pending_special is not None:
            return False  # what the last fill gave (and its watermark) goes before the barrier
        create_snapshot_fn = self._spec.create_snapshot_fn
        if self._created and create_snapshot_fn is not None:
            snapshot = create_snapshot_fn(self._state)
            if snapshot is not None:
                self.outbox.offer_to_snapshot(BroadcastKey(self.context.global_index), snapshot)
        if emitter.mapper is not None:
            self.outbox.offer_to_snapshot(own_key("wm", self.context), emitter.mapper.watermark_state())
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        snapshots = self._restored_snapshots = self._restored_snapshots or []
        for key, value in inbox.take_chunk():
            if tagged(key, "wm") is not None:
                self._restored_watermarks.append(value)
            elif type(key) is BroadcastKey and type(key.key) is int:
                snapshots.append(value)
            else:
                raise unexpected_entry(self.context.vertex_name, self, key)

    def finish_snapshot_restore(self) -> bool:
        restore_snapshot_fn = self._spec.restore_snapshot_fn
        if self._created and restore_snapshot_fn is not None and self._restored_snapshots is not None:
            restore_snapshot_fn(self._state, self._restored_snapshots)
        self._restored_snapshots = None
        if self._emitter.mapper is not None:
            self._emitter.mapper.restore_watermark_states(self._restored_watermarks)
        return True

    def close(self) -> None:
        if self._created:
            self._created = False
            if self._spec.destroy_fn is not None:
                self._spec.destroy_fn(self._state)


class _SourceSpec:
    """The functions and options a builder collected (what a processor needs, picklable)."""

    def __init__(self, kind: str, name: str, create_fn: Callable[[Context], Any]) -> None:
        self.kind, self.name, self.create_fn = kind, name, create_fn
        self.timestamped = kind == "timestamped_stream"
        self.fill_buffer_fn: Callable[[Any, SourceBuffer], None] | None = None
        self.destroy_fn: Callable[[Any], None] | None = None
        self.create_snapshot_fn: Callable[[Any], Any] | None = None
        self.restore_snapshot_fn: Callable[[Any, list], None] | None = None
        self.distributed = False
        self.local_parallelism = 1


def require_callable(fn: Any, step: str) -> Callable:
    """``fn`` if callable, else a TypeError naming the builder step."""
    if not callable(fn):
        raise TypeError(f"{step} needs a callable, got {fn!r} ({type(fn).__name__})")
    return fn


def require_parallelism(value: Any, step: str) -> int:
    """``value`` if it is an int >= 1, else a ValueError naming the builder step."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{step} needs an int >= 1 (processors per member), got {value!r}")
    return value


class _SourceBuilderBase:
    """The steps every kind of source builder shares."""

    def __init__(self, kind: str, name: str, create_fn: Callable[[Context], Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"SourceBuilder.{kind} needs a non-empty name, got {name!r}")
        self._where = f"SourceBuilder.{kind}({name!r})"
        self._spec = _SourceSpec(kind, name, require_callable(create_fn, f"{self._where}: create_fn"))

    def fill_buffer_fn(self: BuilderT, fn: Callable[[Any, SourceBuffer], None]) -> BuilderT:
        """``fn(state, buffer)``: add the items available now; ``buffer.close()`` at the end."""
        self._spec.fill_buffer_fn = require_callable(fn, f"{self._where}.fill_buffer_fn")
        return self

    def destroy_fn(self: BuilderT, fn: Callable[[Any], None]) -> BuilderT:
        """``fn(state)``: release the state when the job ends, however it ends."""
        self._spec.destroy_fn = require_callable(fn, f"{self._where}.destroy_fn")
        return self

    def create_snapshot_fn(self: BuilderT, fn: Callable[[Any], Any]) -> BuilderT:
        """``fn(state) -> snapshot``: what to save of the state when a snapshot is taken (a
        picklable value; None saves nothing). Streams only."""
        self._spec.create_snapshot_fn = require_callable(fn, f"{self._where}.create_snapshot_fn")
        return self

    def restore_snapshot_fn(self: BuilderT, fn: Callable[[Any, list], None]) -> BuilderT:
        """``fn(state, snapshots)``: after a restart, restore from the snapshots of every processor
        of the previous run (keep this processor's share). Streams only."""
        self._spec.restore_snapshot_fn = require_callable(fn, f"{self._where}.restore_snapshot_fn")
        return self

    def distributed(self: BuilderT, local_parallelism: int) -> BuilderT:
        """Run ``local_parallelism`` processors on every member (each with its own state)."""
        self._spec.local_parallelism = require_parallelism(local_parallelism, f"{self._where}.distributed")
        self._spec.distributed = True
        return self

    def _checked_spec(self) -> _SourceSpec:
        if self._spec.fill_buffer_fn is None:
            raise ValueError(f"{self._where}.build(): fill_buffer_fn(fn) was not set; a source needs it "
                             f"to produce items")
        return copy.copy(self._spec)  # later builder steps do not change a built source


class BatchSourceBuilder(_SourceBuilderBase):
    """Builds a finite source: ``fill_buffer_fn`` closes the buffer once everything is added."""

    def build(self) -> Source:
        spec = self._checked_spec()
        if spec.create_snapshot_fn is not None or spec.restore_snapshot_fn is not None:
            raise ValueError(f"{self._where}.build(): create_snapshot_fn and restore_snapshot_fn are for"
                             f" stream sources only; a batch source is read again from its start after"
                             f" a restart (as in Jet)")
        return Source(spec.name, lambda: ConvenientSourceP(spec, None), spec.local_parallelism)


class StreamSourceBuilder(_SourceBuilderBase):
    """Builds an unbounded source (``stream`` or ``timestamped_stream``)."""

    def build(self) -> StreamSource:
        spec = self._checked_spec()
        if (spec.create_snapshot_fn is None) != (spec.restore_snapshot_fn is None):
            raise ValueError(f"{self._where}.build(): create_snapshot_fn and restore_snapshot_fn go together; "
                             f"only one was set")
        policy_supplier = None
        if spec.timestamped:
            def policy_supplier(policy: EventTimePolicy | None) -> Callable[[], Processor]:
                return lambda: ConvenientSourceP(spec, policy)
        return StreamSource(spec.name, lambda: ConvenientSourceP(spec, None), spec.local_parallelism,
                            policy_supplier=policy_supplier, native_timestamps=spec.timestamped)


class SourceBuilder:
    """Entry points: ``batch``, ``stream`` and ``timestamped_stream`` (Jet's SourceBuilder)."""

    @staticmethod
    def batch(name: str, create_fn: Callable[[Context], Any]) -> BatchSourceBuilder:
        """A finite source; ``fill_buffer_fn`` must ``close()`` the buffer when done."""
        return BatchSourceBuilder("batch", name, create_fn)

    @staticmethod
    def stream(name: str, create_fn: Callable[[Context], Any]) -> StreamSourceBuilder:
        """An unbounded source of plain items (timestamps come from ``with_timestamps`` or
        ``with_ingestion_timestamps``)."""
        return StreamSourceBuilder("stream", name, create_fn)

    @staticmethod
    def timestamped_stream(name: str, create_fn: Callable[[Context], Any]) -> StreamSourceBuilder:
        """An unbounded source whose buffer takes ``add(item, timestamp_ms)``; use it with
        ``with_native_timestamps(allowed_lag_ms)``."""
        return StreamSourceBuilder("timestamped_stream", name, create_fn)
