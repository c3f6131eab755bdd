"""Jobs that look inside member processes: what a member holds between jobs, and a finite
stream whose items are of a type of their own, so that any left behind can be counted."""

from __future__ import annotations

import gc
from collections import Counter
from functools import partial
from typing import Any

from jet import AggregateOperations, Pipeline, Sinks, SourceBuilder, WindowDefinition
from jet.core.window_results import WindowResult

WATCHED = ("JobExecution", "DistributedExecutionPlan", "ProcessorTasklet", "SenderTasklet", "ReceiverTasklet",
           "SpscQueue", "ExecutionFuture", "Item")
"""The types whose live objects a member reports."""


class Item:
    """A stream's item: a type of its own, so a member can count those still alive."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def __reduce__(self):
        return Item, (self.value,)


class _Numbers:
    """A finite stream of ``count`` items per member, timestamped by value, 100 a fill."""

    def __init__(self, count: int, context: Any) -> None:
        self.next, self.count = 0, count

    def fill(self, buffer: Any) -> None:
        for value in range(self.next, min(self.next + 100, self.count)):
            buffer.add(Item(value), value)
        self.next += 100
        if self.next >= self.count:
            buffer.close()


def finite_stream_pipeline(count: int) -> Pipeline:
    """A streaming job (its members log progress) over ``count`` items per member: a tumbling
    window's counts and every item go to list sinks."""
    p = Pipeline.create()
    items = (p.read_from(SourceBuilder.timestamped_stream("numbers", partial(_Numbers, count))
                         .fill_buffer_fn(_Numbers.fill).distributed(1).build())
             .with_native_timestamps(0))
    items.write_to(Sinks.list("items"))
    items.window(WindowDefinition.tumbling(100)).aggregate(AggregateOperations.counting()) \
        .map(_window_count).write_to(Sinks.list("counts"))
    return p


def _window_count(result: WindowResult) -> int:
    return result.result


def _report(disable_gc: bool, context: Any, buffer: Any) -> None:
    if disable_gc:
        gc.disable()  # from now on only reference counting frees this member's objects
    counts = Counter(type(obj).__name__ for obj in gc.get_objects())
    buffer.add((context.global_index, {name: counts[name] for name in WATCHED}))
    buffer.close()


def member_heap_pipeline(disable_gc: bool = False) -> Pipeline:
    """A job whose processor on each member reports ``(index, {type: live objects})`` for the
    :data:`WATCHED` types into ``Sinks.list("heap")`` (its own execution counted); with
    ``disable_gc`` the member's cyclic collector is turned off first, for good."""
    p = Pipeline.create()
    p.read_from(SourceBuilder.batch("heap", lambda context: context).fill_buffer_fn(partial(_report, disable_gc))
                .distributed(1).build()).write_to(Sinks.list("heap"))
    return p
