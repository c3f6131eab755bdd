"""CPython's garbage collector timed in a member: ``install()`` once per process (the NEXMark
source does it), ``gc_stats_pipeline()`` gives each member's ``(index, collections, seconds)``
since the last time it was asked. py-spy cannot see collections without pausing the process."""

from __future__ import annotations

import gc
import time
from typing import Any

from jet import Pipeline, Sinks, SourceBuilder

_STATS = {"collections": 0, "seconds": 0.0, "gen2": 0}
_started: list[float] = []


def _callback(phase: str, info: dict) -> None:
    if phase == "start":
        _started.append(time.perf_counter())
    elif _started:
        _STATS["seconds"] += time.perf_counter() - _started.pop()
        _STATS["collections"] += 1
        _STATS["gen2"] += info.get("generation") == 2


def install() -> None:
    """Time every collection of this process from now on."""
    if _callback not in gc.callbacks:
        gc.callbacks.append(_callback)


def _report(context: Any, buffer: Any) -> None:
    buffer.add((context.global_index, _STATS["collections"], _STATS["gen2"], round(_STATS["seconds"], 3)))
    _STATS.update(collections=0, seconds=0.0, gen2=0)
    buffer.close()


def gc_stats_pipeline() -> Pipeline:
    """A job that reports (and resets) every member's collections: ``(member, collections,
    of them generation 2, seconds)`` into ``Sinks.list("gc")``."""
    p = Pipeline.create()
    p.read_from(SourceBuilder.batch("gc-stats", lambda context: context).fill_buffer_fn(_report)
                .distributed(1).build()).write_to(Sinks.list("gc"))
    return p
