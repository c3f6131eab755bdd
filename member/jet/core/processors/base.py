"""The helper every chunk-emitting processor builds on, and the supplier type."""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Iterable, Iterator

from jet.core.processor import Processor
from jet.core.processors.snapshot_state import SnapshotSaver

Supplier = Callable[[], Processor]
LAZY_CHUNK = 1024
"""Items a :class:`LazyOutput` makes at a time for an outbox without a bounded capacity."""
ChunkFn = Callable[[list], list]


class LazyOutput:
    """Output made a chunk at a time, as the outbox takes it, for :meth:`ChunkEmittingProcessor.emit_list`.

    A window of a few hundred thousand keys that closes at once would otherwise build every
    result before the first goes out: they all live until the last is emitted, and each
    collection of the young generations walks them meanwhile (a fifth of NEXMark q18's run).
    ``items`` must not depend on state the processor changes before they are all out."""

    __slots__ = ("items", "pending")

    def __init__(self, items: Iterator[Any]) -> None:
        self.items = items
        self.pending: list | None = None


class ChunkEmittingProcessor(Processor):
    """A processor that emits prepared lists in outbox-sized chunks, resuming after a refusal.

    Its ``save_to_snapshot`` first finishes the list being emitted: output the processor made
    from input before the snapshot barrier must reach the outbox before the barrier does."""

    _results: "list | LazyOutput | None" = None
    _saver: SnapshotSaver | None = None
    _position = 0
    _emitted_whole: "list | LazyOutput | None" = None  # the last emitted whole: a repeated call is a no-op

    def emit_list(self, results: "list | LazyOutput") -> bool:
        """Emit ``results`` (the same list on every call) until all is in; then True.

        The list may be handed downstream as it is: do not read or change it after. Once all of
        it is out, calling again with the same list returns True at once (the list may have been
        finished by :meth:`finish_emitting` in between). A :class:`LazyOutput` is made a chunk
        at a time."""
        if type(results) is LazyOutput:
            return self._emit_lazily(results)
        if self._results is not results:
            if results is self._emitted_whole:
                return True
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
        self._emitted_whole = results
        return True

    def _emit_lazily(self, results: LazyOutput) -> bool:
        if results is self._emitted_whole:
            return True
        self._results = results
        outbox = self.outbox
        capacity = max(outbox.capacities, default=LAZY_CHUNK) or 1
        while True:
            chunk = results.pending
            if chunk is None:
                chunk = list(islice(results.items, capacity))
                if not chunk:
                    break
            if not outbox.offer_chunk(chunk):
                results.pending = chunk
                return False
            results.pending = None
        self._results = None
        self._emitted_whole = results
        return True

    def finish_emitting(self) -> bool:
        """Go on emitting the list :meth:`emit_list` was given last; True when all of it is out."""
        return self._results is None or self.emit_list(self._results)

    def save_to_snapshot(self) -> bool:
        """Finish the output in progress (a stateless processor saves nothing else)."""
        return self.finish_emitting()

    def save_entries(self, entries: Callable[[], Iterable[tuple[Any, Any]]]) -> bool:
        """``save_to_snapshot`` of a processor with state: finish the output in progress, then
        offer ``entries()`` through a :class:`SnapshotSaver`, resuming where the outbox refused
        on the next call; True once all is saved."""
        saver = self._saver
        if saver is None:
            saver = self._saver = SnapshotSaver()
        if not saver.saving and not self.finish_emitting():
            return False
        return saver.offer(self.outbox, entries)
