"""The helper every chunk-emitting processor builds on, and the supplier type."""

from __future__ import annotations

from typing import Callable

from jet.core.processor import Processor

Supplier = Callable[[], Processor]
ChunkFn = Callable[[list], list]


class ChunkEmittingProcessor(Processor):
    """A processor that emits prepared lists in outbox-sized chunks, resuming after a refusal."""

    _results: list | None = None
    _position = 0

    def emit_list(self, results: list) -> bool:
        """Emit ``results`` (the same list on every call) until all is in; then True.

        The list may be handed downstream as it is: do not read or change it after."""
        if self._results is not results:
            self._results, self._position = results, 0
        outbox = self.outbox
        capacity = max(outbox.capacities, default=len(results)) or 1
        while self._position < len(results):
            if self._position == 0 and len(results) <= capacity:
                chunk = results  # handed over whole: the caller does not read it again
            else:
                chunk = results[self._position:self._position + capacity]
            if not outbox.offer_chunk(chunk):
                return False
            self._position += len(chunk)
        self._results = None
        return True
