"""``jet run examples/stream_join.py`` on 1 and 2 members: each sink's items equal a
plain-Python oracle over the example's own events."""

from collections import defaultdict

import pytest

from tests.cli.test_run_stream_examples import example_module, run_example


def _oracles(example):
    orders, payments = example.events()
    minute = example.MINUTE_MS
    interval = sorted([o[0], p[2]] for to, o in orders for tp, p in payments
                      if o[0] == p[0] and to <= tp <= to + 15_000)
    by_window = defaultdict(list)
    for tp, p in payments:
        by_window[(tp // minute, p[0])].append(p)
    joined = sorted(([o[0], p[2]] for to, o in orders for p in by_window[(to // minute, o[0])]), key=repr)
    joined += [[o[0], None] for to, o in orders if not by_window[(to // minute, o[0])]]
    per_customer = defaultdict(lambda: [0, 0])
    for to, o in orders:
        per_customer[(to // minute * minute, o[1])][0] += 1
    for tp, p in payments:
        per_customer[(tp // minute * minute, p[1])][1] += p[2]
    return interval, sorted(joined, key=repr), sorted([s, k, v] for (s, k), v in per_customer.items())


@pytest.mark.parametrize("members", [1, 2])
def test_stream_join_example_equals_plain_python(tmp_path, members):
    example = example_module("stream_join")
    items, err = run_example("stream_join", tmp_path, members=members, timeout="60s")
    assert "job completed in" in err, "streams whose sources close complete"
    by_sink = defaultdict(list)
    for line in items:
        by_sink[line["sink"]].append(line["item"])
    interval, joined, per_customer = _oracles(example)
    assert sorted(by_sink["paid_within_15s"]) == interval
    assert sorted(by_sink["orders_by_minute"], key=repr) == joined
    assert sorted([r[0], r[2], r[3]] for r in by_sink["per_customer"]) == per_customer
