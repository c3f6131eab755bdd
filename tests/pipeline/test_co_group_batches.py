"""Batch co-grouping (aggregate2/3, keyed and global, with and without a combine function) and
hash joins beyond the single left outer one (hash_join2, the builder, inner), against
plain-Python oracles, on one member and on several in this process; and the mistakes refused
at definition or submission, naming the stage."""

import random
from collections import Counter
from dataclasses import replace
from itertools import product

import pytest

from jet import AggregateOperations as A, JoinClause, Pipeline, PipelineDefinitionError, Sinks, Sources, \
    WindowDefinition

from tests.pipeline.stream_support import finite_stream
from tests.pipeline.support import run_pipeline

rng = random.Random(4)
ORDERS = [(f"o{i}", rng.choice("abcdef"), rng.randrange(100)) for i in range(300)]
PAYMENTS = [(f"p{i}", rng.choice("abcdeg"), rng.randrange(50)) for i in range(200)]
REFUNDS = [(f"r{i}", rng.choice("aceh"), rng.randrange(20)) for i in range(90)]
key_of = lambda item: item[1]  # noqa: E731
amount = lambda item: item[2]  # noqa: E731


def _group(items):
    groups = {}
    for item in items:
        groups.setdefault(item[1], []).append(item)
    return groups


@pytest.mark.parametrize("members", [1, 2, 3])
def test_keyed_and_global_aggregate2_and_aggregate3(members):
    p = Pipeline.create()
    orders, payments, refunds = (p.read_from(Sources.items(items, name))
                                 for items, name in ((ORDERS, "orders"), (PAYMENTS, "payments"), (REFUNDS, "refunds")))
    orders.grouping_key(key_of).aggregate2(A.summing(amount), payments.grouping_key(key_of), A.counting()) \
        .write_to(Sinks.list("keyed2"))
    orders.grouping_key(key_of).aggregate3(payments.grouping_key(key_of), refunds.grouping_key(key_of),
                                           A.aggregate_operation3(A.counting(), A.counting(), A.to_set(),
                                                                  finish_fn=lambda t: (t[0], t[1], len(t[2])))) \
        .write_to(Sinks.list("keyed3"))
    orders.aggregate2(A.counting(), payments, A.summing(amount)).write_to(Sinks.list("global2"))
    results = run_pipeline(p, members)
    by_order, by_payment, by_refund = _group(ORDERS), _group(PAYMENTS), _group(REFUNDS)
    keys = set(by_order) | set(by_payment)
    assert sorted(results["keyed2"]) == sorted(
        (k, (sum(map(amount, by_order.get(k, []))), len(by_payment.get(k, [])))) for k in keys)
    keys |= set(by_refund)
    assert sorted(results["keyed3"]) == sorted(
        (k, (len(by_order.get(k, [])), len(by_payment.get(k, [])), len(set(by_refund.get(k, []))))) for k in keys)
    assert results["global2"] == [(len(ORDERS), sum(map(amount, PAYMENTS)))]


@pytest.mark.parametrize("members", [1, 2])
def test_operations_without_combine_are_aggregated_in_one_stage(members):
    no_combine = replace(A.counting(), combine=None, deduct=None, accumulate_keyed_chunk=None, name="plain-count")
    p = Pipeline.create()
    orders, payments = p.read_from(Sources.items(ORDERS, "orders")), p.read_from(Sources.items(PAYMENTS, "payments"))
    orders.grouping_key(key_of).aggregate2(no_combine, payments.grouping_key(key_of), A.counting()) \
        .write_to(Sinks.list("keyed"))
    orders.aggregate2(payments, A.aggregate_operation2(no_combine, A.counting())).write_to(Sinks.list("global"))
    assert "co-group-and-aggregate-tag-0" in str(p.to_dag())
    results = run_pipeline(p, members)
    by_order, by_payment = _group(ORDERS), _group(PAYMENTS)
    assert sorted(results["keyed"]) == sorted(
        (k, (len(by_order.get(k, [])), len(by_payment.get(k, [])))) for k in set(by_order) | set(by_payment))
    # aggregate_p (the single-stage global aggregation, shared with aggregate()) also emits an
    # empty result from each member the all-to-one edge does not feed: only one member here.
    if members == 1:
        assert results["global"] == [(len(ORDERS), len(PAYMENTS))]


def _join_oracle(items, sides, inner):
    output = []
    for item in items:
        matches = [[m for m in side if m[1] == item[1]] or ([] if inner else [None]) for side in sides]
        output.extend((item[0],) + tuple(None if m is None else m[0] for m in combination)
                      for combination in product(*matches))
    return Counter(output)


@pytest.mark.parametrize("members", [1, 2])
def test_hash_join2_builder_and_inner_joins(members):
    p = Pipeline.create()
    orders = p.read_from(Sources.items(ORDERS, "orders"))
    payments, refunds = p.read_from(Sources.items(PAYMENTS, "payments")), p.read_from(Sources.items(REFUNDS, "refunds"))
    ids = lambda o, *ms: (o[0],) + tuple(None if m is None else m[0] for m in ms)  # noqa: E731
    orders.hash_join2(payments, JoinClause.on_keys(key_of, key_of), refunds, JoinClause.on_keys(key_of, key_of),
                      ids).write_to(Sinks.list("left2"))
    orders.hash_join2(payments, JoinClause.on_keys(key_of, key_of), refunds, JoinClause.on_keys(key_of, key_of),
                      ids, how="inner").write_to(Sinks.list("inner2"))
    orders.inner_hash_join(refunds, key_of, key_of, ids).write_to(Sinks.list("inner1"))
    builder = orders.hash_join_builder()
    refund_tag = builder.add(refunds, JoinClause.on_keys(key_of, key_of))
    payment_tag = builder.add(payments, JoinClause.on_keys(key_of, key_of))
    builder.build(lambda o, matches: ids(o, matches[payment_tag], matches[refund_tag])).write_to(Sinks.list("built"))
    results = run_pipeline(p, members)
    assert Counter(results["left2"]) == _join_oracle(ORDERS, [PAYMENTS, REFUNDS], inner=False)
    assert Counter(results["built"]) == _join_oracle(ORDERS, [PAYMENTS, REFUNDS], inner=False)
    assert Counter(results["inner2"]) == _join_oracle(ORDERS, [PAYMENTS, REFUNDS], inner=True)
    assert Counter(results["inner1"]) == _join_oracle(ORDERS, [REFUNDS], inner=True)


def test_a_stream_joined_with_two_batch_sides_keeps_its_timestamps():
    events = [(ts, "abcdef"[ts % 6], ts) for ts in range(0, 600, 7)]
    p = Pipeline.create()
    stream = p.read_from(finite_stream(events)).with_timestamps(lambda e: e[0], 20)
    joined = stream.hash_join2(p.read_from(Sources.items(PAYMENTS, "payments")), JoinClause.on_keys(key_of, key_of),
                               p.read_from(Sources.items(REFUNDS, "refunds")), JoinClause.on_keys(key_of, key_of),
                               lambda e, pay, ref: e, how="inner")
    joined.window(WindowDefinition.tumbling(100)).aggregate(A.counting()).write_to(Sinks.list("counts"))
    results = run_pipeline(p)
    expected = Counter()
    for event in events:
        n = sum(1 for x in PAYMENTS if x[1] == event[1]) * sum(1 for x in REFUNDS if x[1] == event[1])
        if n:
            expected[event[0] // 100 * 100] += n
    assert sorted((r.start, r.result) for r in results["counts"]) == sorted(expected.items())


def test_mistakes_are_refused_naming_the_stage():
    p = Pipeline.create()
    batch = p.read_from(Sources.items(ORDERS, "orders"))
    other = p.read_from(Sources.items(PAYMENTS, "payments"))
    left, right = (p.read_from(finite_stream([], name)).with_timestamps(lambda e: e[0], 10) for name in ("l", "r"))
    window = left.grouping_key(key_of).window(WindowDefinition.tumbling(10))
    with pytest.raises(PipelineDefinitionError, match="'l'.*join mapper must be callable"):
        window.join(right.grouping_key(key_of), "not a function")
    with pytest.raises(PipelineDefinitionError, match="'l'.*keyed too"):
        window.join(right, lambda a, b: a)
    with pytest.raises(PipelineDefinitionError, match="'l'.*'inner' or 'left'"):
        window.join(right.grouping_key(key_of), lambda a, b: a, how="outer")
    with pytest.raises(PipelineDefinitionError, match="'l'.*a window join needs keyed stages"):
        left.window(WindowDefinition.tumbling(10)).join(right, lambda a, b: a)
    with pytest.raises(PipelineDefinitionError, match="'l'.*aggregate2 takes"):
        window.aggregate2(right.grouping_key(key_of))
    with pytest.raises(PipelineDefinitionError, match="does not take 2 inputs"):
        window.aggregate2(right.grouping_key(key_of), A.counting())
    with pytest.raises(PipelineDefinitionError, match="'l'.*without a window"):
        window.aggregate2(A.counting(), right.grouping_key(key_of).window(WindowDefinition.tumbling(10)), A.counting())
    with pytest.raises(PipelineDefinitionError, match="'l'.*upper_ms must be an int"):
        left.grouping_key(key_of).interval_join(right.grouping_key(key_of), 0, 1.5, lambda a, b: a)
    with pytest.raises(PipelineDefinitionError, match="'l'.*is empty"):
        left.grouping_key(key_of).interval_join(right.grouping_key(key_of), -10, 5, lambda a, b: a)
    with pytest.raises(PipelineDefinitionError, match="'orders'.*JoinClause"):
        batch.hash_join2(other, key_of, other, JoinClause.on_keys(key_of, key_of), lambda *a: a)



def test_a_batch_stage_in_a_window_is_refused_at_submission():
    p = Pipeline.create()
    stream = p.read_from(finite_stream([], "l")).with_timestamps(lambda e: e[0], 10)
    batch = p.read_from(Sources.items(ORDERS, "orders"))
    stream.grouping_key(key_of).window(WindowDefinition.tumbling(10)) \
        .aggregate2(A.counting(), batch.grouping_key(key_of), A.counting()).write_to(Sinks.list("bad"))
    with pytest.raises(PipelineDefinitionError, match="stage 'sliding-window-co-group2'.*'orders' is a batch stage"):
        p.to_dag()


def test_a_batch_co_group_of_a_stream_is_refused_at_submission():
    p = Pipeline.create()
    stream = p.read_from(finite_stream([])).with_timestamps(lambda e: e[0], 10)
    batch = p.read_from(Sources.items(ORDERS, "orders"))
    batch.aggregate2(A.counting(), stream, A.counting()).write_to(Sinks.list("bad"))
    with pytest.raises(PipelineDefinitionError, match="stage 'co-aggregate'.*'events' is a stream"):
        p.to_dag()


def test_preserve_order_caps_a_multi_side_hash_join_at_its_upstream():
    p = Pipeline.create().set_preserve_order(True)
    orders = p.read_from(Sources.items(ORDERS, "orders"))
    clause = JoinClause.on_keys(key_of, key_of)
    orders.hash_join2(p.read_from(Sources.items(PAYMENTS, "payments")), clause,
                      p.read_from(Sources.items(REFUNDS, "refunds")), clause, lambda o, *_: o[0], how="inner") \
        .set_local_parallelism(4).write_to(Sinks.list("out"))
    assert p.to_dag().get_vertex("hash-join-joiner").local_parallelism == 1
    expected = [order[0] for order in ORDERS
                for _ in range(sum(_join_oracle([order], [PAYMENTS, REFUNDS], inner=True).values()))]
    assert run_pipeline(p)["out"] == expected  # one member: the source's order throughout


def test_streams_without_timestamps_and_sliding_windows_without_combine_are_refused_at_submission():
    no_combine = replace(A.counting(), combine=None, deduct=None, name="plain-count")
    p = Pipeline.create()
    timed = p.read_from(finite_stream([], "timed")).with_timestamps(lambda e: e[0], 10)
    untimed = p.read_from(finite_stream([], "untimed")).without_timestamps()
    timed.grouping_key(key_of).interval_join(untimed.grouping_key(key_of), 1, 1, lambda a, b: a) \
        .write_to(Sinks.list("bad"))
    with pytest.raises(PipelineDefinitionError, match="stage 'interval-join'.*'untimed' has no timestamps"):
        p.to_dag()
    p = Pipeline.create()
    left, right = (p.read_from(finite_stream([], name)).with_timestamps(lambda e: e[0], 10) for name in ("l", "r"))
    left.grouping_key(key_of).window(WindowDefinition.sliding(20, 10)) \
        .aggregate2(no_combine, right.grouping_key(key_of), A.counting()).write_to(Sinks.list("bad"))
    with pytest.raises(PipelineDefinitionError, match="sliding-window-co-group2.*has no combine function"):
        p.to_dag()
