"""The NEXMark events as a Jet stream source: one processor per member, each emitting its
pre-generated share (``events.write_shares``) with the events' own timestamps, then closing, so
the job ends when every event is processed. Fault-tolerant: its position is in the snapshots.

A member keeps the shares it loaded (``_LOADED``), so ``preload_pipeline`` run once makes the
timed jobs measure the query, not unpickling a million events; the loaded events are moved out
of the collector's sight (``gc.freeze``), as events read from Kafka would not be in the heap.
"""

from __future__ import annotations

import gc
from functools import partial
from typing import Any

from jet import Pipeline, Sinks, SourceBuilder

from .events import load, share_path
from .gc_timer import install as time_collections

CHUNK = 2048
_LOADED: dict[str, list] = {}


def _share_events(directory: str, context: Any) -> list:
    path = str(share_path(directory, context.global_index, context.total_parallelism))
    if path not in _LOADED:
        _LOADED[path] = load(path)
        gc.freeze()
        time_collections()
    return _LOADED[path]


class _Share:
    def __init__(self, directory: str, emit: bool, context: Any) -> None:
        events = _share_events(directory, context)
        self.events = events if emit else []
        self.position = 0
        self.index = context.global_index

    def fill(self, buffer: Any) -> None:
        start, events = self.position, self.events
        chunk = events[start:start + CHUNK]
        # the buffer's lists directly: two C-level extends instead of 2,048 add() calls
        buffer.timestamps.extend([pair[0] for pair in chunk])
        buffer.items.extend([pair[1] for pair in chunk])
        self.position = start + len(chunk)
        if self.position >= len(events):
            buffer.close()

    def snapshot(self) -> tuple[int, int]:
        return self.index, self.position

    def restore(self, snapshots: list) -> None:
        for index, position in snapshots:
            if index == self.index:
                self.position = position


def nexmark_source(directory: str, name: str = "nexmark", emit: bool = True):
    """The source over the shares in ``directory`` (written for the cluster's member count);
    with ``emit=False`` it loads its share and ends."""
    return (SourceBuilder.timestamped_stream(name, partial(_Share, directory, emit))
            .fill_buffer_fn(_Share.fill)
            .create_snapshot_fn(_Share.snapshot)
            .restore_snapshot_fn(_Share.restore)
            .distributed(1)
            .build())


def preload_pipeline(directory: str) -> Pipeline:
    """A job that makes every member load its share of ``directory`` and keep it."""
    p = Pipeline.create()
    p.read_from(nexmark_source(directory, emit=False)).with_native_timestamps(0).write_to(Sinks.noop())
    return p
