"""Scripted sources, a recording processor and plain-Python oracles for the watermark tests.

A script is a list of steps per source processor: a list of items, a ``Watermark`` (IDLE
included), or ``FINISH``. The oracles restate Jet's coalescing rules independently of the
engine (a dict per input, recomputed from scratch at every step).
"""

from __future__ import annotations

import random
import threading
from collections import deque

from jet.core import Processor
from jet.core.special_items import IDLE_MESSAGE, MAX_TIMESTAMP, MIN_TIMESTAMP, Watermark
from jet.execution.plan import ExecutionPlan

FINISH = "finish"
IDLE = "IDLE"


class ScriptedSource(Processor):
    """Emits its script from ``complete()``, one step per call, as items are made available.

    ``scripts[(vertex name, global index)]`` is a deque the test may keep appending to; the
    processor finishes at FINISH. With ``hold`` set it also waits (emitting nothing) while
    the event is clear before FINISH."""

    def __init__(self, scripts: dict, hold: threading.Event | None = None) -> None:
        self._scripts = scripts
        self._hold = hold

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._steps = self._scripts[(context.vertex_name, context.global_index)]

    def complete(self) -> bool:
        steps = self._steps
        if not steps:
            return False
        step = steps[0]
        if step == FINISH:
            if self._hold is not None and not self._hold.is_set():
                return False
            steps.popleft()
            return True
        if type(step) is Watermark:
            taken = self.outbox.offer_watermark(step)
        else:
            taken = self.outbox.offer_chunk(list(step))
        if taken:
            steps.popleft()
        return False


class Recorder(Processor):
    """Records ("item", ordinal, item) and ("wm", timestamp) in arrival order; forwards wms."""

    def __init__(self, arrivals: dict) -> None:
        self._arrivals = arrivals

    def init(self, outbox, context) -> None:
        super().init(outbox, context)
        self._record = self._arrivals.setdefault(context.global_index, [])

    def process(self, ordinal, inbox) -> None:
        self._record.extend(("item", ordinal, item) for item in inbox.take_chunk())

    def try_process_watermark(self, watermark) -> bool:
        if not self.outbox.offer_watermark(watermark):
            return False
        self._record.append(("wm", watermark.timestamp))
        return True


def watermarks_of(arrivals: list) -> list:
    return [entry[1] for entry in arrivals if entry[0] == "wm"]


# -- the oracle ------------------------------------------------------------------------------------
class MinOverInputs:
    """Jet's coalescing restated: what one coalescing point forwards after each observation."""

    def __init__(self, inputs) -> None:
        self.wm = {i: MIN_TIMESTAMP for i in inputs}
        self.idle: set = set()
        self.done: set = set()
        self.last = self.top = MIN_TIMESTAMP
        self.said_all_idle = False

    def watermark(self, i, t) -> list:
        if t == IDLE:
            self.idle.add(i)
        else:
            assert t > self.wm[i], "scripts must have increasing watermarks per source"
            self.idle.discard(i)
            self.said_all_idle = False
            self.wm[i] = t
            self.top = max(self.top, t)
        return self._forward()

    def event(self, i) -> None:
        if i in self.idle:
            self.idle.discard(i)
            self.said_all_idle = False

    def finish(self, i) -> list:
        self.done.add(i)
        return self._forward()

    def _forward(self) -> list:
        if self.said_all_idle:
            return []
        live = [wm for i, wm in self.wm.items() if i not in self.idle and i not in self.done]
        if live:
            if min(live) > self.last:
                self.last = min(live)
                return [self.last]
            return []
        self.said_all_idle = True
        out = []
        if self.top > self.last:
            self.last = self.top
            out.append(self.top)
        if len(self.done) < len(self.wm):
            out.append(IDLE)
        return out


def expected_run(schedule: list, ordinal_of: dict) -> tuple[list, list]:
    """What a downstream processor receives, and what it forwards, when ``schedule`` (a list of
    (source, step) in emission order) is observed one step at a time. ``ordinal_of`` maps each
    source to the input ordinal it feeds."""
    ordinals = sorted(set(ordinal_of.values()))
    per_edge = {o: MinOverInputs([s for s in ordinal_of if ordinal_of[s] == o]) for o in ordinals}
    across = MinOverInputs(ordinals)
    live = {o: {s for s in ordinal_of if ordinal_of[s] == o} for o in ordinals}
    received, forwarded = [], []

    def second_level(forwards: list) -> None:
        for t in forwards:
            forwarded.append(t)
            if t != IDLE:
                received.append(("wm", t))

    for source, step in schedule:
        o = ordinal_of[source]
        if step == FINISH:
            first = per_edge[o].finish(source)
            live[o].discard(source)
        elif type(step) is Watermark:
            first = per_edge[o].watermark(source, IDLE if step == IDLE_MESSAGE else step.timestamp)
        else:
            per_edge[o].event(source)
            across.event(o)
            received.extend(("item", o, x) for x in step)
            continue
        for t in first:
            second_level(across.watermark(o, t))
        if step == FINISH and not live[o]:
            second_level(across.finish(o))
    return received, forwarded


def random_script(rng: random.Random, sources: list, steps: int) -> list:
    """A random interleaving of items, increasing watermarks, IDLE and, last, FINISH."""
    next_wm = {s: rng.randrange(0, 5) for s in sources}
    schedule, serial = [], 0
    for _ in range(steps):
        source = rng.choice(sources)
        roll = rng.random()
        if roll < 0.45:
            count = rng.randrange(1, 4)
            schedule.append((source, [(source, serial + k) for k in range(count)]))
            serial += count
        elif roll < 0.8:
            next_wm[source] += rng.randrange(1, 10)
            schedule.append((source, Watermark(next_wm[source])))
        else:
            schedule.append((source, IDLE_MESSAGE))
    finishing = list(sources)
    rng.shuffle(finishing)
    schedule.extend((source, FINISH) for source in finishing)
    return _without_repeated_idle(schedule)


def _without_repeated_idle(schedule: list) -> list:
    """Drop an IDLE that directly repeats its source's previous special item (a single-input
    coalescer passes such a repeat on, a multi-input one does not: not what these tests check)."""
    last_special: dict = {}
    kept = []
    for source, step in schedule:
        if step == IDLE_MESSAGE and last_special.get(source) == IDLE_MESSAGE:
            continue
        last_special[source] = step if type(step) is Watermark else None
        kept.append((source, step))
    return kept


def scripts_of(schedule: list) -> dict:
    scripts: dict = {}
    for source, step in schedule:
        scripts.setdefault(source, deque()).append(step)
    return scripts


# -- checks that hold however the tasklets interleave ----------------------------------------------
def check_arrivals(arrivals: list, schedule: list, ordinal_of: dict) -> None:
    """Invariants of one downstream processor's arrivals under any interleaving: strictly
    increasing watermarks; an item arrives before every watermark its source had not yet
    released (by a watermark at least as high, IDLE or FINISH) when it was emitted."""
    wms = watermarks_of(arrivals)
    assert wms == sorted(set(wms)), f"watermarks not strictly increasing: {wms}"
    position = {entry[2]: index for index, entry in enumerate(arrivals) if entry[0] == "item"}
    wm_position = {entry[1]: index for index, entry in enumerate(arrivals) if entry[0] == "wm"}
    by_source: dict = {}
    for source, step in schedule:
        by_source.setdefault(source, []).append(step)
    for source, steps in by_source.items():
        for w, at in wm_position.items():
            for step in steps:
                if step == FINISH or (type(step) is Watermark and step.timestamp >= w):
                    break
                if type(step) is list:
                    for item in step:
                        if item in position:
                            assert position[item] < at, (
                                f"item {item} of {source} arrived after wm {w} it precedes")


def max_watermark(schedule: list) -> int:
    return max(step.timestamp for _, step in schedule
               if type(step) is Watermark and step.timestamp != MAX_TIMESTAMP)


# -- driving a plan one step at a time -------------------------------------------------------------
class StepDriver:
    """Builds ``dag`` on one member and calls its tasklets in turn, in this thread, until
    nothing moves (no threads: every step is observed downstream before the next)."""

    def __init__(self, dag, skip: tuple = ()) -> None:
        self.plan = ExecutionPlan(dag, cooperative_threads=1)
        self.tasklets = [t for t in self.plan.build() if t.context.vertex_name not in skip]
        for tasklet in self.tasklets:
            tasklet.init()

    def settle(self, max_passes: int = 10_000) -> None:
        for _ in range(max_passes):
            if not any([t.call() & 1 for t in self.tasklets]):
                return
        raise AssertionError("the tasklets kept making progress")

    def tasklet(self, name: str):
        return next(t for t in self.tasklets if t.name == name)
