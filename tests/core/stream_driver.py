"""A hand-cranked runner for one streaming processor: the tests choose the clock and the calls.

``TestSupport`` checks the processor contract but never calls ``try_process`` and hides the
processor; tests of idleness, early results and the late-event counter drive it with this.
"""

from __future__ import annotations

from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.special_items import Watermark

_MAX_CALLS = 10_000


class FakeClock:
    """A clock in ms that moves only when told."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


class StreamDriver:
    """Feeds one processor and collects what it emits (watermarks included) in ``output``."""

    max_calls = _MAX_CALLS

    def __init__(self, supplier: Callable[[], Processor], capacity: int = 3, context: Context | None = None) -> None:
        self.processor = supplier()
        self._outbox = Outbox(1, capacity)
        self.processor.init(self._outbox, context or Context(vertex_name="driven"))
        self._inbox = Inbox()
        self.output: list = []

    @property
    def outbox(self) -> Outbox:
        return self._outbox

    def _drain(self) -> None:
        self.output.extend(self._outbox.buckets[0])
        self._outbox.buckets[0] = []
        if self._outbox.pending_special is not None:
            self.output.append(self._outbox.pending_special)
            self._outbox.special_taken()

    def _until_true(self, step: Callable[[], bool]) -> None:
        for _ in range(self.max_calls):
            done = step()
            self._drain()
            if done:
                return
        raise AssertionError("the processor never finished the call")

    def process(self, items: list) -> "StreamDriver":
        self._inbox.add_chunk(list(items))
        self._until_true(lambda: self.processor.process(0, self._inbox) or self._inbox.is_empty())
        return self

    def watermark(self, timestamp: int) -> "StreamDriver":
        self._until_true(lambda: self.processor.try_process_watermark(Watermark(timestamp)))
        return self

    def try_process(self) -> "StreamDriver":
        self._until_true(self.processor.try_process)
        return self

    def complete(self) -> "StreamDriver":
        self._until_true(self.processor.complete)
        return self

    def feed(self, inputs: list) -> "StreamDriver":
        """Items and ``Watermark``s in order; each run of items is one inbox chunk."""
        run: list = []
        for entry in inputs:
            if type(entry) is Watermark:
                if run:
                    self.process(run)
                    run = []
                self.watermark(entry.timestamp)
            else:
                run.append(entry)
        if run:
            self.process(run)
        return self

    def take(self) -> list[Any]:
        """The output so far, emptied."""
        output, self.output = self.output, []
        return output
