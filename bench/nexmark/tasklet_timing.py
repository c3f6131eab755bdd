"""Timing every tasklet call in a member, installed and read by jobs (``tasklet_cpu.py``).

A module of its own, imported by the members: the jobs' functions are then pickled by
reference, and the sums live once per member process across the jobs.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import Any

from jet import Pipeline, Sinks, SourceBuilder

_seconds: Counter = Counter()
_calls: Counter = Counter()
_WRAPPED = "_tasklet_cpu_wrapped"


def _wrap(cls: type, method: str, label) -> None:
    original = getattr(cls, method)
    if getattr(original, _WRAPPED, False):
        return
    clock = time.thread_time_ns

    def timed(self, *args, **kwargs):
        started = clock()
        try:
            return original(self, *args, **kwargs)
        finally:
            key = f"{label(self)} {method}"
            _seconds[key] += clock() - started
            _calls[key] += 1
    setattr(timed, _WRAPPED, True)
    setattr(cls, method, timed)


def _vertex(tasklet: Any) -> str:
    return f"{tasklet.name} ({type(tasklet.processor).__name__})"


def instrument(context: Any, buffer: Any) -> None:
    from jet.cluster.edges.receiver import ReceiverTasklet
    from jet.cluster.edges.sender import SenderTasklet
    from jet.execution.processor_tasklet import ProcessorTasklet
    _wrap(ProcessorTasklet, "call", _vertex)
    _wrap(ProcessorTasklet, "_hand_over_outbox", _vertex)
    _wrap(SenderTasklet, "call", lambda tasklet: "senders")
    _wrap(ReceiverTasklet, "call", lambda tasklet: "receivers")
    _seconds.clear()
    _calls.clear()
    buffer.add(context.global_index)
    buffer.close()


def report(context: Any, buffer: Any) -> None:
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        threads[f"{name} {tid}"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    buffer.add((context.global_index, {k: (v / 1e9, _calls[k]) for k, v in _seconds.items()}, threads))
    buffer.close()


def job(name: str, fill) -> Pipeline:
    p = Pipeline.create()
    p.read_from(SourceBuilder.batch(name, lambda context: context).fill_buffer_fn(fill).distributed(1).build()) \
        .write_to(Sinks.list(name))
    return p
