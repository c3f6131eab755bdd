"""Enrichment through services (sync and async against a real local HTTP service), rolling
aggregates, distinct and sort: each against a plain-Python oracle, in this process and on a
local cluster of 2 member processes."""

from __future__ import annotations

import random
import sys
from collections import Counter
from itertools import accumulate
from operator import itemgetter

import cloudpickle
import pytest

import jet
from jet import AggregateOperations as A, Pipeline, ServiceFactories, Sinks, Sources, WindowDefinition
from jet.core.window_results import KeyedWindowResult, WindowResult
from jet.execution.errors import JobFailedError
from jet.pipeline.errors import PipelineDefinitionError

from tests.pipeline.enrichment_support import (LookupService, aiohttp_factory, enriched, failing_lookup_with,
                                               lookup_with, pool_factory, pool_lookup_with, told_factory)
from tests.pipeline.stream_support import finite_stream, sliding_counts
from tests.pipeline.support import run_pipeline

cloudpickle.register_pickle_by_value(sys.modules[__name__])

ts_of, key_of = itemgetter(0), itemgetter(1)
ITEMS = list(range(300))


def _run(p, where):
    """The named results of ``p`` run in this process (2 threads) or on 2 member processes."""
    if where == "in-process":
        return run_pipeline(p, threads=2)
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        return {name: job.result(name) for name in _sink_names(p)}


def _sink_names(p):
    return [t.connector.name[len("list("):-1] for t in p.transforms if t.kind == "sink"]


WHERE = ["in-process", "cluster"]


# -- synchronous services -------------------------------------------------------------------------
@pytest.mark.parametrize("where", WHERE)
def test_map_filter_and_flat_map_using_a_service(where):
    offset = ServiceFactories.shared_service(lambda: {"offset": 1000})
    p = Pipeline.create()
    items = p.read_from(Sources.items(ITEMS))
    items.map_using_service(offset, lambda svc, x: x + svc["offset"]).write_to(Sinks.list("map"))
    items.filter_using_service(offset, lambda svc, x: (x + svc["offset"]) % 7 == 0).write_to(Sinks.list("filter"))
    items.flat_map_using_service(ServiceFactories.non_shared_service(lambda: 2),
                                 lambda n, x: [x] * n).write_to(Sinks.list("flat"))
    results = _run(p, where)
    assert sorted(results["map"]) == [x + 1000 for x in ITEMS]
    assert sorted(results["filter"]) == [x for x in ITEMS if (x + 1000) % 7 == 0]
    assert sorted(results["flat"]) == sorted(ITEMS * 2)


@pytest.mark.parametrize("where", WHERE)
def test_a_keyed_service_sees_each_key_on_one_processor(where):
    per_processor = ServiceFactories.non_shared_service(lambda: object())
    p = Pipeline.create()
    (p.read_from(Sources.items(ITEMS)).grouping_key(lambda x: x % 10)
     .map_using_service(per_processor, lambda svc, key, x: (key, id(svc), x))
     .write_to(Sinks.list("keyed")))
    results = _run(p, where)["keyed"]
    assert sorted(x for _, _, x in results) == ITEMS
    owners: dict = {}
    for key, owner, x in results:
        assert key == x % 10
        owners.setdefault(key, set()).add(owner)
    assert all(len(o) == 1 for o in owners.values()), owners


@pytest.mark.parametrize("where", WHERE)
def test_a_shared_service_is_made_once_per_member_and_a_non_shared_one_per_processor(where):
    with LookupService() as service:
        p = Pipeline.create()
        items = p.read_from(Sources.items(ITEMS))
        items.map_using_service(told_factory(service.url, True), lambda s, x: x) \
            .set_local_parallelism(3).write_to(Sinks.list("a"))
        items.map_using_service(told_factory(service.url, False), lambda s, x: x) \
            .set_local_parallelism(3).write_to(Sinks.list("b"))
        _run(p, where)
    members = 1 if where == "in-process" else 2
    assert service.events == Counter({"shared-created": members, "shared-destroyed": members,
                                      "own-created": 3 * members, "own-destroyed": 3 * members})


# -- async services, a real HTTP service ----------------------------------------------------------
@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("client", ["aiohttp", "thread-pool"])
def test_async_enrichment_gives_the_oracle_in_input_order_within_the_bound(where, client):
    with LookupService(delay_s=0.005, slow_every=3) as service:
        factory, fn = ((aiohttp_factory(), lookup_with(service.url)) if client == "aiohttp"
                       else (pool_factory(), pool_lookup_with(service.url)))
        p = Pipeline.create()
        (p.read_from(Sources.items(ITEMS))
         .map_using_service_async(factory, fn, max_concurrent_ops=5).set_local_parallelism(1)
         .write_to(Sinks.list("ordered")))
        results = _run(p, where)
    ordered = results["ordered"]
    assert sorted(ordered) == [enriched(x) for x in ITEMS]
    if where == "in-process":  # one source processor, one enriching processor: input order kept
        assert ordered == [enriched(x) for x in ITEMS]
    members = 1 if where == "in-process" else 2
    assert 1 < service.max_in_flight <= 5 * members


@pytest.mark.parametrize("where", WHERE)
def test_unordered_and_keyed_async_enrichment(where):
    with LookupService(delay_s=0.003, slow_every=4) as service:
        p = Pipeline.create()
        items = p.read_from(Sources.items(ITEMS))
        items.map_using_service_async(aiohttp_factory(), lookup_with(service.url), max_concurrent_ops=8,
                                      preserve_order=False).write_to(Sinks.list("unordered"))
        lookup = lookup_with(service.url)
        (items.grouping_key(lambda x: x % 5)
         .filter_using_service_async(aiohttp_factory(),
                                     lambda s, key, x: _is_even_answer(lookup(s, x)), max_concurrent_ops=3)
         .write_to(Sinks.list("keyed")))
        results = _run(p, where)
    assert sorted(results["unordered"]) == [enriched(x) for x in ITEMS]
    assert sorted(results["keyed"]) == [x for x in ITEMS if enriched(x) % 2 == 0]


async def _is_even_answer(answer):
    return (await answer) % 2 == 0


@pytest.mark.parametrize("where", WHERE)
def test_a_failing_service_fails_the_job_with_the_users_frames(where):
    with LookupService() as service:
        p = Pipeline.create()
        (p.read_from(Sources.items(list(range(20))))
         .map_using_service_async(aiohttp_factory(), failing_lookup_with(service.url))
         .write_to(Sinks.list()))
        if where == "in-process":
            with pytest.raises(JobFailedError) as failure:
                run_pipeline(p, threads=2)
            text = str(failure.value) + failure.value.traceback_text
        else:
            with jet.local_cluster(members=2) as cluster:
                job = cluster.new_job(p)
                with pytest.raises(Exception) as failure:
                    job.join(timeout=120)
                text = str(failure.value) + getattr(failure.value, "traceback_text", "")
    assert "500" in text and "lookup_or_fail" in text, text


def test_a_function_that_handles_the_services_error_keeps_the_job_running():
    with LookupService() as service:
        lookup = failing_lookup_with(service.url)

        async def lookup_or_minus_one(session, x):
            try:
                return await lookup(session, x)
            except Exception:  # noqa: BLE001 - the user's own fallback
                return -1

        p = Pipeline.create()
        (p.read_from(Sources.items(list(range(20))))
         .map_using_service_async(aiohttp_factory(), lookup_or_minus_one).write_to(Sinks.list()))
        (results,) = run_pipeline(p, threads=2).values()
    assert sorted(results) == sorted(-1 if x == 7 else enriched(x) for x in range(20))


@pytest.mark.parametrize("mode", ["ordered", "unordered", "sync"])
@pytest.mark.parametrize("where", WHERE)
def test_a_window_after_enrichment_counts_exactly(where, mode):
    rng = random.Random(5)
    events = [(ts, rng.randrange(50)) for ts in sorted(rng.randrange(3000) for _ in range(400))]
    with LookupService(delay_s=0.004, slow_every=7) as service:
        lookup = lookup_with(service.url)
        p = Pipeline.create()
        stream = p.read_from(finite_stream(events)).with_timestamps(ts_of, 10)
        if mode == "sync":
            fetch = pool_lookup_with(service.url)
            enriched_stream = stream.map_using_service(
                pool_factory(2), lambda pool, e: (e[0], fetch(pool, e[1]).result() % 4))
        else:
            enriched_stream = stream.map_using_service_async(
                aiohttp_factory(), lambda s, e: _tagged(e, lookup(s, e[1])), max_concurrent_ops=6,
                preserve_order=mode == "ordered")
        (enriched_stream.grouping_key(key_of).window(WindowDefinition.tumbling(200)).aggregate(A.counting())
         .write_to(Sinks.list("windows")))
        results = _run(p, where)
    tagged = [(ts, enriched(x) % 4) for ts, x in events]
    assert sorted(results["windows"]) == sliding_counts(tagged, ts_of, key_of, 200, 200)


async def _tagged(event, answer):
    return event[0], (await answer) % 4


# -- rolling aggregates, distinct, sort ------------------------------------------------------------
@pytest.mark.parametrize("where", WHERE)
def test_rolling_aggregates_keyed_and_global(where):
    p = Pipeline.create()
    items = p.read_from(Sources.items(ITEMS))
    items.grouping_key(lambda x: x % 7).rolling_aggregate(A.summing()).write_to(Sinks.list("keyed"))
    items.rolling_aggregate(A.counting()).write_to(Sinks.list("global"))
    results = _run(p, where)
    assert sorted(results["global"]) == list(range(1, len(ITEMS) + 1))
    by_key: dict = {}
    for key, running in results["keyed"]:
        by_key.setdefault(key, []).append(running)
    for key in range(7):
        # the running sums, in the order the key's items came (members interleave the source):
        # each rises by one of the key's items, and all of them are used once
        mine = [x for x in ITEMS if x % 7 == key]
        running = by_key[key]
        assert running == sorted(running)
        assert Counter(b - a for a, b in zip([0] + running, running)) == Counter(mine)
    if where == "in-process":  # one source processor: the input order, so the plain prefix sums
        assert sorted(results["keyed"]) == sorted((k, s) for k in range(7)
                                                  for s in accumulate(x for x in ITEMS if x % 7 == k))


@pytest.mark.parametrize("where", WHERE)
def test_distinct_batch_keyed_and_windowed(where):
    rng = random.Random(3)
    words = [rng.choice("abcdefghij") + rng.choice("xyz") for _ in range(500)]
    events = [(ts, rng.randrange(6)) for ts in sorted(rng.randrange(2000) for _ in range(300))]
    p = Pipeline.create()
    w = p.read_from(Sources.items(words))
    w.distinct().write_to(Sinks.list("distinct"))
    w.grouping_key(lambda s: s[0]).distinct().write_to(Sinks.list("first-per-key"))
    stream = p.read_from(finite_stream(events)).with_timestamps(ts_of, 10)
    stream.map(key_of).window(WindowDefinition.tumbling(500)).distinct().write_to(Sinks.list("window"))
    stream.grouping_key(key_of).window(WindowDefinition.tumbling(500)).distinct() \
        .write_to(Sinks.list("keyed-window"))
    results = _run(p, where)
    assert sorted(results["distinct"]) == sorted(set(words))
    firsts = results["first-per-key"]
    assert sorted(s[0] for s in firsts) == sorted({s[0] for s in words}) and set(firsts) <= set(words)
    expected = sorted({(ts // 500 * 500, ts // 500 * 500 + 500, v) for ts, v in events})
    assert sorted((r.start, r.end, r.result) for r in results["window"]) == expected
    assert all(type(r) is WindowResult for r in results["window"])
    keyed = results["keyed-window"]
    assert sorted((r.start, r.end, r.key) for r in keyed) == expected
    assert all(type(r) is KeyedWindowResult and r.result[1] == r.key for r in keyed)


@pytest.mark.parametrize("where", WHERE)
def test_sort_gives_a_global_order(where):
    rng = random.Random(9)
    items = [(rng.randrange(1000), i) for i in range(2000)]
    p = Pipeline.create()
    source = p.read_from(Sources.items(items))
    source.rebalance().sort().write_to(Sinks.list("natural"))
    source.rebalance().sort(key_fn=itemgetter(0), reverse=True).write_to(Sinks.list("by-key-desc"))
    results = _run(p, where)
    assert results["natural"] == sorted(items)
    assert [k for k, _ in results["by-key-desc"]] == sorted((k for k, _ in items), reverse=True)
    assert sorted(results["by-key-desc"]) == sorted(items)


# -- definition errors -----------------------------------------------------------------------------
def test_bad_arguments_are_refused_at_definition_naming_the_stage():
    p = Pipeline.create()
    items = p.read_from(Sources.items([1]))
    factory = ServiceFactories.shared_service(lambda: None)
    with pytest.raises(PipelineDefinitionError, match="'map-using-service'.*jet.ServiceFactories"):
        items.map_using_service(lambda: None, lambda s, x: x)
    with pytest.raises(PipelineDefinitionError, match="'map-using-service-async'.*max_concurrent_ops"):
        items.map_using_service_async(factory, lambda s, x: x, max_concurrent_ops=0)
    with pytest.raises(PipelineDefinitionError, match="'filter-using-service-async-keyed'.*preserve_order"):
        items.grouping_key(str).filter_using_service_async(factory, lambda s, k, x: x, preserve_order="yes")
    with pytest.raises(PipelineDefinitionError, match="'rolling-aggregate'.*AggregateOperation"):
        items.rolling_aggregate(len)
    stream = p.read_from(finite_stream([(1, 1)])).with_timestamps(ts_of, 0)
    with pytest.raises(PipelineDefinitionError, match="distinct\\(\\) without a window"):
        stream.distinct()
    with pytest.raises(PipelineDefinitionError, match="sort\\(\\) is a batch operation"):
        stream.sort()
