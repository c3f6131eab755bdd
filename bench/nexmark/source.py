"""The NEXMark events as a Jet stream source: one processor per member, each emitting its
pre-generated share (``events.write_shares``) with the events' own timestamps, then closing, so
the job ends when every event is processed. Fault-tolerant: its position is in the snapshots."""

from __future__ import annotations

from typing import Any

from jet import SourceBuilder

from .events import load, share_path

CHUNK = 2048


class _Share:
    def __init__(self, directory: str, context: Any) -> None:
        self.events = load(share_path(directory, context.global_index, context.total_parallelism))
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


def nexmark_source(directory: str, name: str = "nexmark"):
    """The source over the shares in ``directory`` (written for the cluster's member count)."""
    return (SourceBuilder.timestamped_stream(name, lambda context: _Share(directory, context))
            .fill_buffer_fn(_Share.fill)
            .create_snapshot_fn(_Share.snapshot)
            .restore_snapshot_fn(_Share.restore)
            .distributed(1)
            .build())
