"""Stream pipelines run to the end on one member, on several in this process and on a local
cluster, each against a plain-Python oracle over the same events (the streams are finite: when
every source completes, the windows flush)."""

import random
from collections import Counter
from operator import itemgetter

import pytest

import jet
from jet import AggregateOperations as A, KeyedWindowResult, Pipeline, Sinks, Sources, WindowDefinition

from tests.pipeline.stream_support import finite_stream, session_counts, sliding_counts
from tests.pipeline.support import run_pipeline

ts_of, key_of = itemgetter(0), itemgetter(1)


def _events(n=240, span_ms=3000, keys="abcde", seed=7):
    rng = random.Random(seed)
    return [(ts, rng.choice(keys)) for ts in sorted(rng.randrange(span_ms) for _ in range(n))]


def _final(results):
    return sorted(r for r in results if not r.is_early)


@pytest.mark.parametrize("members", [1, 2, 3])
@pytest.mark.parametrize("size, slide", [(100, 100), (200, 50)])
def test_keyed_tumbling_and_sliding_windows_count_every_event(members, size, slide):
    events = _events()
    p = Pipeline.create()
    stream = p.read_from(finite_stream(events)).with_timestamps(ts_of, 20)
    stream.grouping_key(key_of).window(WindowDefinition.sliding(size, slide)).aggregate(A.counting()) \
        .write_to(Sinks.list("keyed"))
    stream.window(WindowDefinition.sliding(size, slide)).aggregate(A.counting()).write_to(Sinks.list("all"))
    results = run_pipeline(p, members)
    assert sorted(results["keyed"]) == sliding_counts(events, ts_of, key_of, size, slide)
    assert sorted(results["all"]) == sliding_counts(events, ts_of, None, size, slide)


@pytest.mark.parametrize("members", [1, 2, 3])
def test_one_stage_windows_and_session_windows(members):
    events = _events(seed=11)
    p = Pipeline.create()
    stream = p.read_from(finite_stream(events)).with_timestamps(ts_of, 20)
    stream.rebalance().grouping_key(key_of).window(WindowDefinition.tumbling(250)) \
        .aggregate(A.to_list()).map(lambda r: r._replace(result=len(r.result))).write_to(Sinks.list("single"))
    stream.grouping_key(key_of).window(WindowDefinition.session(40)).aggregate(A.counting()) \
        .write_to(Sinks.list("sessions"))
    stream.window(WindowDefinition.session(15)).aggregate(A.counting()).write_to(Sinks.list("all-sessions"))
    results = run_pipeline(p, members)
    assert sorted(results["single"]) == sliding_counts(events, ts_of, key_of, 250, 250)
    assert sorted(results["sessions"]) == session_counts(events, ts_of, key_of, 40)
    assert sorted(results["all-sessions"]) == session_counts(events, ts_of, None, 15)


@pytest.mark.parametrize("members", [1, 2])
def test_timestamps_from_an_add_timestamps_vertex_or_native_ones_and_every_aggregation(members):
    events = [(ts, key, ts % 7) for ts, key in _events(seed=3)]
    p = Pipeline.create()
    plain = p.read_from(finite_stream(events, "plain", emits_watermarks=False)).with_timestamps(ts_of, 20)
    native = p.read_from(finite_stream(events, "native", native_ts=ts_of)).with_native_timestamps(20)
    value = itemgetter(2)
    operations = {"summing": A.summing(value), "max": A.max_by(value), "set": A.to_set(),
                  "avg": A.averaging(value), "all": A.all_of(A.counting(), A.summing(value))}
    for name, operation in operations.items():
        plain.grouping_key(key_of).window(WindowDefinition.tumbling(500)).aggregate(operation) \
            .write_to(Sinks.list(name))
    native.grouping_key(key_of).window(WindowDefinition.sliding(500, 100)).aggregate(A.counting()) \
        .write_to(Sinks.list("native"))
    results = run_pipeline(p, members)
    windows = {}
    for event in events:
        windows.setdefault((event[0] // 500 * 500, event[1]), []).append(event)
    expected = {
        "summing": {w: sum(map(value, es)) for w, es in windows.items()},
        "max": {w: max(es, key=value)[2] for w, es in windows.items()},
        "set": {w: set(es) for w, es in windows.items()},
        "avg": {w: sum(map(value, es)) / len(es) for w, es in windows.items()},
        "all": {w: [len(es), sum(map(value, es))] for w, es in windows.items()},
    }
    for name, per_window in expected.items():
        got = {(r.start, r.key): r.result for r in results[name]}
        if name == "max":
            got = {w: r[2] for w, r in got.items()}
        if name == "all":
            got = {w: list(r) for w, r in got.items()}
        if name == "avg":
            assert got.keys() == per_window.keys()
            assert all(abs(got[w] - per_window[w]) < 1e-9 for w in got)
        else:
            assert got == per_window, name
        assert all(r.end == r.start + 500 for r in results[name])
    assert sorted(results["native"]) == sliding_counts(events, ts_of, key_of, 500, 100)


def test_early_results_come_before_the_exact_final_ones():
    events = [(ts, "k") for ts in range(0, 400, 4)]
    p = Pipeline.create()
    source = finite_stream(events, local_parallelism=1, chunk_size=2, all_on_first=True, pause_s=0.004)
    p.read_from(source).with_timestamps(ts_of, 0).grouping_key(key_of) \
        .window(WindowDefinition.tumbling(1000).set_early_results_period(10)).aggregate(A.counting()) \
        .write_to(Sinks.list())
    (results,) = run_pipeline(p, 1).values()
    assert _final(results) == [KeyedWindowResult(0, 1000, "k", 100)]
    early = [r for r in results if r.is_early]
    assert early, "a 0.2 s stream with a 10 ms early-results period gave no early result"
    counts = [r.result for r in early]
    assert counts == sorted(counts) and all(0 < n <= 100 for n in counts)
    assert all((r.start, r.end, r.key) == (0, 1000, "k") for r in early)


def _stateful_oracle(events, ttl_ms, lag_ms, frame_ms):
    """Keyed running counts with Jet's eviction: the source emits each event, then the watermark
    it makes due (floored to the frame); a watermark evicts every key whose latest event is
    below wm - ttl, emitting ("evicted", key, count); the end evicts everything."""
    outputs, states, watermark, top = [], {}, None, None
    for ts, key in events:
        if watermark is not None:
            for k in [k for k, (last, _) in states.items() if last < watermark - ttl_ms]:
                outputs.append(("evicted", k, states.pop(k)[1]))
        last, count = states.get(key, (ts, 0))
        states[key] = (max(last, ts), count + 1)
        outputs.append((key, count + 1))
        top = ts if top is None else max(top, ts)
        watermark = (top - lag_ms) // frame_ms * frame_ms
    outputs += [("evicted", k, count) for k, (_, count) in states.items()]
    return outputs


@pytest.mark.parametrize("members", [1, 2, 3])
def test_stateful_mapping_evicts_keys_past_their_ttl(members):
    rng = random.Random(5)
    events, ts = [], 0
    for i in range(150):
        # Dense at first: nothing can be evicted before every other source processor (they
        # have no events) has completed and stopped holding the watermark back.
        ts += rng.choice([1, 2, 3] if i < 30 else [1, 2, 3, 90])
        events.append((ts, rng.choice("abc")))
    p = Pipeline.create()
    stream = p.read_from(finite_stream(events, chunk_size=1, all_on_first=True)).with_timestamps(ts_of, 5)

    def count(state, key, event):
        state[0] += 1
        return (key, state[0])

    def evict(state, key, watermark):
        return ("evicted", key, state[0])

    stream.grouping_key(key_of).map_stateful(100, lambda: [0], count, evict).write_to(Sinks.list("keyed"))
    stream.map_stateful(lambda: [0], lambda state, event: state.__setitem__(0, state[0] + 1) or state[0]) \
        .write_to(Sinks.list("global"))
    results = run_pipeline(p, members)
    assert sorted(results["global"]) == list(range(1, len(events) + 1))
    if members == 1:
        assert Counter(results["keyed"]) == Counter(_stateful_oracle(events, 100, 5, 10))
        return
    # On several members the empty source processors of the other members hold the watermark
    # back until their DONE arrives, so which gaps evict depends on timing; what holds whatever
    # the timing: each key's counts run 1, 2, ... between evictions, and the evictions account
    # for every event of the key.
    events_per_key = Counter(map(key_of, events))
    for key, total in events_per_key.items():
        runs = sorted(n for k, n in (r for r in results["keyed"] if len(r) == 2) if k == key)
        evicted = sorted(n for _, k, n in (r for r in results["keyed"] if len(r) == 3) if k == key)
        assert sum(evicted) == total == len(runs)
        assert Counter(runs) == Counter(n for length in evicted for n in range(1, length + 1))


@pytest.mark.parametrize("members", [1, 2])
def test_a_stream_enriched_by_a_hash_join_then_windowed(members):
    events = _events(seed=13)
    names = {"a": "apple", "b": "banana", "c": "cherry", "d": "date"}
    p = Pipeline.create()
    lookup = p.read_from(Sources.items(list(names.items())))
    enriched = p.read_from(finite_stream(events)).with_timestamps(ts_of, 20) \
        .hash_join(lookup, key_of, itemgetter(0), lambda e, match: (e[0], match[1] if match else "?"))
    enriched.write_to(Sinks.list("enriched"))
    enriched.grouping_key(key_of).window(WindowDefinition.tumbling(1000)).aggregate(A.counting()) \
        .write_to(Sinks.list("counts"))
    results = run_pipeline(p, members)
    joined = [(ts, names.get(key, "?")) for ts, key in events]
    assert sorted(results["enriched"]) == sorted(joined)
    assert sorted(results["counts"]) == sliding_counts(joined, ts_of, key_of, 1000, 1000)


@pytest.mark.parametrize("members", [1, 2])
def test_two_merged_streams_and_stages_after_a_window(members):
    first, second = _events(seed=17, keys="ab"), _events(seed=19, keys="bc")
    p = Pipeline.create()
    one = p.read_from(finite_stream(first, "first")).with_timestamps(ts_of, 20)
    two = p.read_from(finite_stream(second, "second", local_parallelism=1)).with_timestamps(ts_of, 20)
    per_key = one.merge(two).grouping_key(key_of).window(WindowDefinition.tumbling(100)).aggregate(A.counting())
    per_key.write_to(Sinks.list("per-key"))
    # Window results are events at end - 1: a second window sums the first one's counts.
    per_key.filter(lambda r: r.key != "c").window(WindowDefinition.tumbling(1000)) \
        .aggregate(A.summing(lambda r: r.result)).map(lambda r: (r.start, r.result)).write_to(Sinks.list("sums"))
    results = run_pipeline(p, members)
    both = first + second
    assert sorted(results["per-key"]) == sliding_counts(both, ts_of, key_of, 100, 100)
    expected = Counter(ts // 1000 * 1000 for ts, key in both if key != "c")
    assert sorted(results["sums"]) == sorted(expected.items())


def test_events_behind_the_watermark_are_dropped_from_windows():
    events = [(5, "a"), (15, "a"), (27, "a"), (3, "a"), (21, "a"), (44, "a"), (12, "a"), (41, "a")]
    p = Pipeline.create()
    p.read_from(finite_stream(events, local_parallelism=1, chunk_size=1, all_on_first=True)) \
        .with_timestamps(ts_of, 5).grouping_key(key_of).window(WindowDefinition.tumbling(10)) \
        .aggregate(A.to_list()).map(lambda r: (r.start, sorted(t for t, _ in r.result))).write_to(Sinks.list())
    (results,) = run_pipeline(p, 1).values()
    # After 27 the watermark is 20 (27 - 5, floored to the 10 ms frame): 3 and 12 are late;
    # 21 is within the lag, and 41 is after 44's watermark of 30 but in a window still open.
    assert sorted(results) == [(0, [5]), (10, [15]), (20, [21, 27]), (40, [41, 44])]


def test_stateless_stream_stages_give_the_sink_bare_items():
    events = _events(n=60)
    p = Pipeline.create()
    p.read_from(finite_stream(events)).with_timestamps(ts_of, 20) \
        .map(lambda e: (e[1], e[0])).filter(lambda e: e[0] != "a").flat_map(lambda e: [e, e[0]]).peek() \
        .write_to(Sinks.list())
    (results,) = run_pipeline(p, 2).values()
    expected = [out for ts, key in events if key != "a" for out in ((key, ts), key)]
    assert Counter(results) == Counter(expected)


@pytest.mark.parametrize("members", [1, 2, 3])
def test_windows_on_a_local_cluster(members):
    events = _events(seed=23)
    p = Pipeline.create()
    stream = p.read_from(finite_stream(events)).with_timestamps(ts_of, 20)
    stream.grouping_key(key_of).window(WindowDefinition.sliding(300, 100)).aggregate(A.counting()) \
        .write_to(Sinks.list("sliding"))
    stream.grouping_key(key_of).window(WindowDefinition.session(30)).aggregate(A.counting()) \
        .write_to(Sinks.list("sessions"))
    with jet.local_cluster(members=members) as cluster:
        job = cluster.new_job(p)
        job.join(timeout=120)
        assert sorted(job.result("sliding")) == sliding_counts(events, ts_of, key_of, 300, 100)
        assert sorted(job.result("sessions")) == session_counts(events, ts_of, key_of, 30)

