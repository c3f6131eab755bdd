"""Watermarks through queues, edge streams and processor tasklets on one member."""

import random
from collections import deque

import pytest

from jet.core import DAG, Edge, EdgeConfig
from jet.core.processors import items_source_p
from jet.core.special_items import DONE_ITEM, IDLE_MESSAGE, MIN_TIMESTAMP, Watermark
from jet.execution import JobFailedError, execute
from jet.core.inbox import Inbox
from jet.execution.inbound import InboundEdgeStream
from jet.execution.queues import SpscQueue

from tests.execution.watermark_support import (FINISH, IDLE, Recorder, ScriptedSource, StepDriver,
                                               check_arrivals, expected_run, max_watermark,
                                               random_script, scripts_of, watermarks_of)

A0, A1, A2, B0 = ("a", 0), ("a", 1), ("a", 2), ("b", 0)


def two_edge_dag(scripts, arrivals, a_parallelism=3, tail=True):
    """a (a_parallelism sources) -> rec ordinal 0, b (1 source) -> rec ordinal 1, rec -> tail."""
    dag = DAG()
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), a_parallelism)
    rec = dag.new_vertex("rec", lambda: Recorder(arrivals), 1)
    dag.edge(Edge.from_(a).to(rec, 0))
    if B0 in scripts:
        b = dag.new_vertex("b", lambda: ScriptedSource(scripts), 1)
        dag.edge(Edge.from_(b).to(rec, 1))
    if tail:
        dag.edge(Edge.from_(rec).to(dag.new_vertex("tail", lambda: Recorder({}), 1)))
    return dag


def forwarded_downstream(driver):
    """What rec handed to its output queue (the tail is never run): timestamps, IDLE, DONE."""
    queue = driver.plan.queues["rec->tail"][(0, 0)]
    out = []
    while (entry := queue.poll()) is not None:
        if entry is DONE_ITEM:
            out.append("DONE")
        elif entry == IDLE_MESSAGE:
            out.append(IDLE)
        else:
            out.append(entry.timestamp)
    return out


def run_stepped(schedule, ordinal_of):
    """Emit ``schedule`` one step at a time, letting every tasklet settle after each."""
    scripts = {source: deque() for source in ordinal_of}
    arrivals = {}
    driver = StepDriver(two_edge_dag(scripts, arrivals, a_parallelism=sum(
        1 for s in ordinal_of if s[0] == "a")), skip=("tail",))
    driver.settle()
    for source, step in schedule:
        scripts[source].append(step)
        driver.settle()
    return arrivals[0], forwarded_downstream(driver), driver


def wm(t):
    return Watermark(t)


SCENARIO = [
    (A0, [1, 2]), (A0, wm(10)), (A1, wm(20)), (A2, wm(15)),  # edge a: min 10; b not yet
    (B0, wm(12)),                                             # min(10, 12) -> 10
    (A0, [3]), (A0, wm(30)),                                  # a at 15 -> min(15, 12) -> 12
    (A2, IDLE_MESSAGE),                                       # a at 20, b still 12
    (B0, wm(25)),                                             # -> 20
    (A1, FINISH),                                             # a at 30 (a2 idle) -> 25
    (A0, IDLE_MESSAGE),                                       # a: all idle/done -> IDLE
    (B0, wm(40)),                                             # a idle: b alone -> 40
    (A2, [4]),                                                # a2 back: a holds 30 < 40, nothing
    (A2, wm(50)),                                             # a at 50, b 40: nothing above 40
    (B0, IDLE_MESSAGE),                                       # b idle -> 50
    (A0, FINISH), (A2, FINISH), (B0, FINISH),                 # all idle/done -> IDLE, then DONE
]
ORDINALS = {A0: 0, A1: 0, A2: 0, B0: 1}


def test_a_scripted_run_gives_jets_coalesced_watermarks():
    received, forwarded, driver = run_stepped(SCENARIO, ORDINALS)
    assert received == [("item", 0, 1), ("item", 0, 2), ("wm", 10), ("item", 0, 3), ("wm", 12),
                        ("wm", 20), ("wm", 25), ("wm", 40), ("item", 0, 4), ("wm", 50)]
    assert forwarded == [10, 12, 20, 25, 40, 50, IDLE, "DONE"]
    rec = driver.tasklet("rec#0")
    assert (rec.top_observed_wm, rec.coalesced_wm, rec.last_forwarded_wm) == (50, 50, 50)
    assert expected_run(SCENARIO, ORDINALS) == (received, forwarded[:-1])


def test_when_every_input_goes_idle_the_top_watermark_goes_first_then_idle():
    schedule = [(A0, wm(1)), (A1, wm(2)), (A1, IDLE_MESSAGE), (A0, IDLE_MESSAGE),
                (A0, FINISH), (A1, FINISH)]
    received, forwarded, _ = run_stepped(schedule, {A0: 0, A1: 0})
    assert received == [("wm", 1), ("wm", 2)]
    assert forwarded == [1, 2, IDLE, "DONE"]


def test_done_releases_the_minimum_it_held():
    schedule = [(A0, wm(5)), (A1, wm(9)), (A0, FINISH), (A1, wm(11)), (A1, FINISH)]
    received, forwarded, _ = run_stepped(schedule, {A0: 0, A1: 0})
    assert received == [("wm", 5), ("wm", 9), ("wm", 11)]
    assert forwarded == [5, 9, 11, "DONE"]


@pytest.mark.parametrize("seed", range(12))
def test_random_scripts_give_what_jets_rules_give(seed):
    rng = random.Random(seed)
    sources = [A0, A1, A2, B0]
    schedule = random_script(rng, sources, 60)
    received, forwarded, _ = run_stepped(schedule, ORDINALS)
    expected_received, expected_forwarded = expected_run(schedule, ORDINALS)
    assert received == expected_received
    assert forwarded == expected_forwarded + ["DONE"]


def test_a_processor_gets_the_same_watermark_again_until_it_takes_it():
    attempts = []

    class Reluctant(Recorder):
        def try_process_watermark(self, watermark):
            attempts.append(watermark.timestamp)
            return attempts.count(watermark.timestamp) >= 3 and super().try_process_watermark(watermark)

    scripts = {A0: deque([[1], wm(7), [2], wm(8), FINISH])}
    arrivals = {}
    dag = DAG()
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), 1)
    dag.edge(Edge.from_(a).to(dag.new_vertex("rec", lambda: Reluctant(arrivals), 1)))
    execute(dag, timeout=30)
    assert attempts == [7, 7, 7, 8, 8, 8]
    assert arrivals[0] == [("item", 0, 1), ("wm", 7), ("item", 0, 2), ("wm", 8)]


def test_a_source_without_inputs_has_no_coalesced_watermark_but_forwards_its_own():
    scripts = {A0: deque([wm(3), wm(4), FINISH])}
    driver = StepDriver(two_edge_dag(scripts, {}, a_parallelism=1, tail=False))
    driver.settle()
    source = driver.tasklet("a#0")
    assert (source.top_observed_wm, source.coalesced_wm, source.last_forwarded_wm) == (
        MIN_TIMESTAMP, MIN_TIMESTAMP, 4)


def test_a_stream_stops_its_drain_at_a_due_watermark_and_says_idle_after_the_top():
    first, second = SpscQueue(16, "first"), SpscQueue(16, "second")
    stream = InboundEdgeStream(0, 0, [first, second], name="x->y")
    inbox = Inbox()
    first.offer_chunk([1, 2])
    first.offer_special(wm(4))
    first.offer_chunk([3])
    second.offer_special(wm(6))
    second.offer_chunk([5])
    stream.drain_to(inbox)  # first: 1, 2 then wm 4 (nothing due yet); second: wm 6 -> 4 due
    assert (list(inbox), stream.pending_watermark) == ([1, 2], wm(4))
    stream.pending_watermark = None
    first.offer_special(IDLE_MESSAGE)
    second.offer_special(IDLE_MESSAGE)
    stream.drain_to(inbox)  # first: 3, IDLE -> second alone holds 6
    assert (list(inbox), stream.pending_watermark) == ([1, 2, 3], wm(6))
    stream.pending_watermark = None
    stream.drain_to(inbox)  # second: 5, then IDLE: all idle, top 6 already forwarded
    assert (list(inbox), stream.pending_watermark) == ([1, 2, 3, 5], IDLE_MESSAGE)


def test_a_watermark_that_does_not_increase_fails_the_job_naming_the_queue():
    scripts = {A0: deque([wm(5), wm(5), FINISH])}
    dag = DAG()
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), 1)
    dag.edge(Edge.from_(a).to(dag.new_vertex("rec", lambda: Recorder({}), 1)))
    with pytest.raises(JobFailedError, match=r"a#0->rec#0.*last one=5, new one=5"):
        execute(dag, timeout=30)


@pytest.mark.parametrize("threads,seed", [(1, 0), (2, 1), (2, 2)])
def test_threads_backpressure_and_stealing_keep_the_watermark_rules(threads, seed):
    rng = random.Random(seed)
    sources = [("a", i) for i in range(4)]
    schedule = random_script(rng, sources, 400)
    scripts = scripts_of(schedule)
    arrivals = {}
    dag = DAG()
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), 4)
    rec = dag.new_vertex("rec", lambda: Recorder(arrivals), 3)
    tiny = EdgeConfig(queue_size=2, outbox_capacity=2)
    dag.edge(Edge.from_(a).to(rec).broadcast().set_config(tiny))
    execute(dag, cooperative_threads=threads, timeout=60)
    items = sorted(x for _, step in schedule if type(step) is list for x in step)
    for index in range(3):
        check_arrivals(arrivals[index], schedule, {s: 0 for s in sources})
        assert sorted(e[2] for e in arrivals[index] if e[0] == "item") == items
        assert watermarks_of(arrivals[index])[-1] == max_watermark(schedule)


def test_a_higher_priority_input_is_read_to_its_end_before_any_watermark():
    scripts = {A0: deque([[("s", 1)], wm(10), [("s", 2)], wm(20), FINISH])}
    arrivals = {}
    dag = DAG()
    build = dag.new_vertex("build", items_source_p(range(500)), 1)
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), 1)
    rec = dag.new_vertex("rec", lambda: Recorder(arrivals), 1)
    dag.edge(Edge.from_(build).to(rec, 0).priority(-1))
    dag.edge(Edge.from_(a).to(rec, 1))
    execute(dag, cooperative_threads=2, timeout=30)
    assert arrivals[0] == ([("item", 0, x) for x in range(500)]
                           + [("item", 1, ("s", 1)), ("wm", 10), ("item", 1, ("s", 2)), ("wm", 20)])


def test_a_watermark_on_a_full_queue_waits_and_arrives_in_order():
    scripts = {A0: deque([list(range(50)), wm(1), list(range(50, 99)),
                                                    wm(2), FINISH])}
    arrivals = {}
    dag = DAG()
    a = dag.new_vertex("a", lambda: ScriptedSource(scripts), 1)
    rec = dag.new_vertex("rec", lambda: Recorder(arrivals), 1)
    dag.edge(Edge.from_(a).to(rec).set_config(EdgeConfig(queue_size=1, outbox_capacity=1)))
    execute(dag, timeout=30)
    assert arrivals[0] == ([("item", 0, x) for x in range(50)] + [("wm", 1)]
                           + [("item", 0, x) for x in range(50, 99)] + [("wm", 2)])
