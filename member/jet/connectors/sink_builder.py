"""Jet's SinkBuilder: a sink from a few functions (a database client, an HTTP endpoint, ...).

::

    sink = (SinkBuilder.sink("db", lambda ctx: connect_db())
            .receive_fn(lambda db, item: db.stage(item))
            .flush_fn(lambda db: db.commit())
            .destroy_fn(lambda db: db.close())
            .build())

``create_fn(context)`` makes the state on each sink processor, ``receive_fn(state, item)`` takes
each item, ``flush_fn(state)`` runs after each batch of items the processor received, and
``destroy_fn(state)`` when the job ends. The processor runs on a thread of its own, so the
functions may block. It ignores watermarks and keeps no snapshot state: at-least-once after a
restart, exactly-once only if the writes are idempotent.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

from jet.connectors.base import Sink
from jet.connectors.source_builder import require_callable, require_parallelism
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark


class _SinkSpec:
    """The functions and options a sink builder collected (picklable)."""

    def __init__(self, name: str, create_fn: Callable[[Context], Any]) -> None:
        self.name, self.create_fn = name, create_fn
        self.receive_fn: Callable[[Any, Any], None] | None = None
        self.flush_fn: Callable[[Any], None] | None = None
        self.destroy_fn: Callable[[Any], None] | None = None
        self.local_parallelism = 1


class WriteBufferedP(Processor):
    """Jet's WriteBufferedP: drains the whole inbox into ``receive_fn``, then calls ``flush_fn``."""

    is_cooperative = False

    def __init__(self, spec: _SinkSpec) -> None:
        self._spec = spec
        self._state: Any = None
        self._created = False

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._state = self._spec.create_fn(context)
        self._created = True

    def process(self, ordinal: int, inbox: Inbox) -> None:
        state, receive = self._state, self._spec.receive_fn
        for item in inbox.take_chunk():
            receive(state, item)
        if self._spec.flush_fn is not None:
            self._spec.flush_fn(state)

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def close(self) -> None:
        if self._created:
            self._created = False
            if self._spec.destroy_fn is not None:
                self._spec.destroy_fn(self._state)


class SinkBuilder:
    """``SinkBuilder.sink(name, create_fn)`` then ``receive_fn`` (required), ``flush_fn``,
    ``destroy_fn``, ``preferred_local_parallelism`` and ``build()``."""

    def __init__(self, name: str, create_fn: Callable[[Context], Any]) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"SinkBuilder.sink needs a non-empty name, got {name!r}")
        self._where = f"SinkBuilder.sink({name!r})"
        self._spec = _SinkSpec(name, require_callable(create_fn, f"{self._where}: create_fn"))

    @staticmethod
    def sink(name: str, create_fn: Callable[[Context], Any]) -> "SinkBuilder":
        """Start building a sink whose processors each hold ``create_fn(context)``."""
        return SinkBuilder(name, create_fn)

    def receive_fn(self, fn: Callable[[Any, Any], None]) -> "SinkBuilder":
        """``fn(state, item)``: take one item."""
        self._spec.receive_fn = require_callable(fn, f"{self._where}.receive_fn")
        return self

    def flush_fn(self, fn: Callable[[Any], None]) -> "SinkBuilder":
        """``fn(state)``: make what was received durable or visible (after every batch)."""
        self._spec.flush_fn = require_callable(fn, f"{self._where}.flush_fn")
        return self

    def destroy_fn(self, fn: Callable[[Any], None]) -> "SinkBuilder":
        """``fn(state)``: release the state when the job ends, however it ends."""
        self._spec.destroy_fn = require_callable(fn, f"{self._where}.destroy_fn")
        return self

    def preferred_local_parallelism(self, local_parallelism: int) -> "SinkBuilder":
        """Sink processors per member (default 1)."""
        self._spec.local_parallelism = require_parallelism(local_parallelism,
                                                           f"{self._where}.preferred_local_parallelism")
        return self

    def build(self) -> Sink:
        spec = copy.copy(self._spec)  # later builder steps do not change a built sink
        if spec.receive_fn is None:
            raise ValueError(f"{self._where}.build(): receive_fn(fn) was not set; a sink needs it to take items")
        return Sink(spec.name, lambda: WriteBufferedP(spec), spec.local_parallelism)
