"""Jet's AsyncTransformUsingServiceOrderedP and ...UnorderedP: a map, filter or flat-map whose
function returns a future (or an awaitable, run on the member's event loop) of its result.

The processor never waits: it starts calls while fewer than ``max_concurrent_ops`` of its items
are unfinished, and collects finished calls when the tasklet calls it again (it asks to be
polled while any call is out). An item counts against the bound from its call until its output
is in the outbox, so a slow service stops the intake and memory stays at the bound: the inbox
keeps its items and the queues upstream fill up (backpressure).

Watermarks: ordered, a watermark waits in the queue behind the items before it and goes out
when they have; unordered, items are counted per watermark interval and a watermark goes out
once no item received before it is unfinished (its results, whenever they finished, are out).
A snapshot barrier passes only when every call is finished and its output emitted, so no
output of an item before the barrier comes after it (exactly-once without saving inputs).
A failed call fails the job with the exception the user's function raised, its frames intact.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.processors.base import Supplier
from jet.core.processors.using_service import bind_service, check_service_arguments
from jet.core.service_factory import ServiceFactory, ServiceLease, as_future
from jet.core.special_items import MIN_TIMESTAMP, Watermark


class AsyncTransformUsingServiceP(Processor):
    """At most ``max_concurrent_ops`` unfinished items; output in input order or as it comes."""

    def __init__(self, kind: str, factory: ServiceFactory, fn: Callable[..., Any],
                 key_fn: Callable[[Any], Any] | None, pairs: bool, max_concurrent_ops: int,
                 preserve_order: bool) -> None:
        self._kind, self._factory, self._fn, self._key_fn = kind, factory, fn, key_fn
        self._pairs, self._max, self._ordered = pairs, max_concurrent_ops, preserve_order
        self._lease: ServiceLease | None = None
        self._call: Callable[[Any], Any] = fn
        self._queue: deque = deque()  # ordered: entries and watermarks in input order
        self._done: deque = deque()  # unordered: entries whose call finished (appended by callbacks)
        self._epochs: deque = deque([[0, None]])  # unordered: [unfinished items, watermark after them]
        self._ready: list = []  # outputs the outbox refused, offered first
        self.unfinished = 0
        """Items called and not yet emitted (the bounded quantity)."""
        self.max_unfinished_seen = 0

    @property
    def needs_polling(self) -> bool:  # type: ignore[override]
        # Polled while calls are out: nothing wakes the thread when a future finishes.
        return self.unfinished > 0 or bool(self._ready) or bool(self._queue) or len(self._epochs) > 1

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._lease = self._factory.lease(context)
        self._call = bind_service(self._fn, self._lease.service, self._key_fn)

    def close(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    # -- intake -----------------------------------------------------------------------------------
    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self._drain():
            return
        pairs, call, ordered, limit = self._pairs, self._call, self._ordered, self._max
        while self.unfinished < limit and inbox:
            item = inbox.peek()
            ts, value = item if pairs else (MIN_TIMESTAMP, item)
            result = call(value)
            future = as_future(result)
            if future is None:
                raise TypeError(
                    f"vertex {self.context.vertex_name!r}: the async function must return a"
                    f" concurrent.futures.Future or an awaitable, got {type(result).__name__}"
                    f" {result!r} for item {value!r}")
            inbox.remove()
            self.unfinished += 1
            entry = [future, ts, value, None]
            if ordered:
                self._queue.append(entry)
            else:
                epoch = self._epochs[-1]
                epoch[0] += 1
                entry[3] = epoch
                future.add_done_callback(lambda _f, entry=entry: self._done.append(entry))
        if self.unfinished > self.max_unfinished_seen:
            self.max_unfinished_seen = self.unfinished
        self._drain()

    def try_process(self) -> bool:
        self._drain()
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self._ordered:
            if not self._queue and not self._ready:
                return self.outbox.offer_watermark(watermark)
            self._queue.append(watermark)
        else:
            self._epochs[-1][1] = watermark
            self._epochs.append([0, None])
        self._drain()
        return True

    def complete(self) -> bool:
        return self._drain() and self._idle()

    def save_to_snapshot(self) -> bool:
        # The barrier waits for every call before it: nothing of theirs may follow it.
        return self._drain() and self._idle()

    def _idle(self) -> bool:
        # A watermark offered by this very call must reach the engine before a barrier or DONE can.
        return (self.unfinished == 0 and not self._queue and len(self._epochs) == 1 and not self._ready
                and self.outbox.pending_special is None)

    # -- output -----------------------------------------------------------------------------------
    def _drain(self) -> bool:
        """Emit what finished (and the watermarks it let through); False while the outbox refuses."""
        if self._ready:
            if not self.outbox.offer_chunk(self._ready):
                return False
            self._ready = []
        return self._drain_ordered() if self._ordered else self._drain_unordered()

    def _drain_ordered(self) -> bool:
        queue, outputs = self._queue, []
        while queue:
            head = queue[0]
            if type(head) is Watermark:
                if outputs and not self._emit(outputs):
                    return False
                outputs = []
                if not self.outbox.offer_watermark(head):
                    return False
                queue.popleft()
                continue
            if not head[0].done():
                break
            queue.popleft()
            self.unfinished -= 1
            self._outputs(head, outputs)
        return not outputs or self._emit(outputs)

    def _drain_unordered(self) -> bool:
        done, outputs = self._done, []
        while done:
            entry = done.popleft()
            entry[3][0] -= 1
            self.unfinished -= 1
            self._outputs(entry, outputs)
        if outputs and not self._emit(outputs):
            return False
        epochs = self._epochs
        while len(epochs) > 1 and epochs[0][0] == 0:
            if not self.outbox.offer_watermark(epochs[0][1]):
                return False
            epochs.popleft()
        return True

    def _emit(self, outputs: list) -> bool:
        if self.outbox.offer_chunk(outputs):
            return True
        self._ready = outputs
        return False

    def _outputs(self, entry: list, outputs: list) -> None:
        """Append the output of a finished call (raising the user's error if it failed)."""
        future, ts, value, _epoch = entry
        result = future.result()  # finished: never blocks; raises the call's own exception
        kind = self._kind
        if kind == "map":
            if result is not None:
                outputs.append((ts, result) if self._pairs else result)
        elif kind == "filter":
            if result:
                outputs.append((ts, value) if self._pairs else value)
        elif result is not None:
            outputs.extend([(ts, out) for out in result] if self._pairs else result)


def async_transform_using_service_p(kind: str, factory: ServiceFactory, fn: Callable[..., Any],
                                    key_fn: Callable[[Any], Any] | None = None, pairs: bool = False,
                                    max_concurrent_ops: int = 4, preserve_order: bool = True) -> Supplier:
    """Jet's mapUsingServiceAsync (and the filter and flat-map forms): ``fn(service, item)``, or
    keyed ``fn(service, key, item)``, returns a ``concurrent.futures.Future`` or an awaitable."""
    where = "async_transform_using_service_p"
    check_service_arguments(where, kind, factory, fn)
    if not isinstance(max_concurrent_ops, int) or isinstance(max_concurrent_ops, bool) or max_concurrent_ops < 1:
        raise ValueError(f"{where}: max_concurrent_ops must be an int >= 1, got {max_concurrent_ops!r}")
    return lambda: AsyncTransformUsingServiceP(kind, factory, fn, key_fn, pairs, max_concurrent_ops,
                                               bool(preserve_order))
