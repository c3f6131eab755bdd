"""Each operator and aggregate against a plain-Python reference, on 1 and 3 members."""

from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jet import AggregateOperation, AggregateOperations as A, Pipeline, Sinks, Sources

from tests.pipeline.support import run_pipeline

MEMBERS = pytest.mark.parametrize("members", [1, 3])
SLOW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _run(build, members, threads=1):
    p = Pipeline.create()
    build(p)
    return run_pipeline(p, members, threads)


@MEMBERS
@SLOW
@given(st.lists(st.integers(-50, 50), max_size=300))
def test_map_filter_flat_map_peek(members, numbers):
    results = _run(lambda p: p.read_from(Sources.items(numbers)).map(lambda x: x * 2)
                   .filter(lambda x: x % 3).flat_map(lambda x: [x, -x]).peek()
                   .write_to(Sinks.list()), members)
    expected = [y for x in numbers if (x * 2) % 3 for y in (x * 2, -x * 2)]
    assert Counter(results["default"]) == Counter(expected)


@MEMBERS
@pytest.mark.parametrize("threads", [1, 2])
def test_grouped_aggregates_equal_plain_python(members, threads):
    rows = [(f"k{i % 13}", i % 7 - 3) for i in range(2000)]
    ops = {
        "count": (A.counting(), lambda vs: len(vs)),
        "sum": (A.summing(lambda r: r[1]), lambda vs: sum(v for _, v in vs)),
        "avg": (A.averaging(lambda r: r[1]), lambda vs: sum(v for _, v in vs) / len(vs)),
        "min": (A.min_by(lambda r: (r[1], r[0])), lambda vs: min(vs, key=lambda r: (r[1], r[0]))),
        "max": (A.max_by(lambda r: (r[1], r[0])), lambda vs: max(vs, key=lambda r: (r[1], r[0]))),
        "set": (A.to_set(), lambda vs: set(vs)),
        "list": (A.to_list(), lambda vs: sorted(vs)),
    }

    def build(p):
        stage = p.read_from(Sources.items(rows))
        for name, (op, _) in ops.items():
            stage.grouping_key(lambda r: r[0]).aggregate(op).write_to(Sinks.list(name))

    results = _run(build, members, threads)
    groups = defaultdict(list)
    for row in rows:
        groups[row[0]].append(row)
    for name, (_, reference) in ops.items():
        got = dict(results[name])
        if name == "list":
            got = {k: sorted(v) for k, v in got.items()}
        assert got == {k: reference(vs) for k, vs in groups.items()}, name


@MEMBERS
@SLOW
@given(st.lists(st.integers(0, 1000), max_size=500))
def test_global_aggregates_and_all_of(members, numbers):
    results = _run(lambda p: p.read_from(Sources.items(numbers)).aggregate(
        A.all_of(A.counting(), A.summing(), A.min_by(), A.max_by())).write_to(Sinks.list()), members)
    assert results["default"] == [(len(numbers), sum(numbers), min(numbers, default=None),
                                   max(numbers, default=None))]


@MEMBERS
def test_user_defined_aggregate_operation(members):
    def by_length(word):
        return len(word), word

    longest = AggregateOperation(create=str, accumulate=lambda a, w: max(a, w, key=by_length),
                                 combine=lambda a, b: max(a, b, key=by_length), finish=str.upper)
    words = ["a", "bbb", "cc", "dddd", "e"] * 40
    results = _run(lambda p: p.read_from(Sources.items(words)).grouping_key(len)
                   .aggregate(longest).write_to(Sinks.list()), members)
    assert sorted(results["default"]) == [(1, "E"), (2, "CC"), (3, "BBB"), (4, "DDDD")]


@MEMBERS
def test_hash_join_enriches_with_every_match_and_keeps_unmatched(members):
    orders = [(i, f"customer{i % 4}") for i in range(200)]
    customers = [("customer0", "Ada"), ("customer1", "Bo"), ("customer1", "Bo-2")]

    def build(p):
        lookup = p.read_from(Sources.items(customers))
        p.read_from(Sources.items(orders)).hash_join(
            lookup, lambda o: o[1], lambda c: c[0],
            lambda o, c: (o[0], c[1] if c else None)).write_to(Sinks.list())

    results = _run(build, members)
    index = defaultdict(list)
    for key, name in customers:
        index[key].append(name)
    expected = [(oid, name) for oid, key in orders for name in (index.get(key) or [None])]
    assert Counter(results["default"]) == Counter(expected)


@MEMBERS
def test_merge_and_rebalance(members):
    def build(p):
        evens = p.read_from(Sources.items(range(0, 1000, 2)))
        odds = p.read_from(Sources.items(range(1, 1000, 2))).set_name("odds")
        merged = evens.merge(odds).rebalance().map(lambda x: x + 1)
        merged.rebalance(lambda x: x % 10).map(lambda x: x * 10).write_to(Sinks.list())

    results = _run(build, members)
    assert sorted(results["default"]) == [(x + 1) * 10 for x in range(1000)]


def test_files_csv_and_jsonl_sources_and_sinks(tmp_path):
    (tmp_path / "a.txt").write_text("x y\nz\n")
    (tmp_path / "b.txt").write_text("w\r\nv")
    (tmp_path / "t.csv").write_text("name,age\nann,3\nbo,5\n")
    (tmp_path / "r.jsonl").write_text('{"a": 1}\n\n[2, 3]\n')
    out = tmp_path / "out"

    def build(p):
        p.read_from(Sources.files(str(tmp_path / "*.txt"))).write_to(Sinks.list("lines"))
        p.read_from(Sources.csv(str(tmp_path / "*.csv"))).write_to(Sinks.list("rows"))
        p.read_from(Sources.jsonl(str(tmp_path / "*.jsonl"))).write_to(Sinks.jsonl(str(out)))

    for members in (1, 3):
        results = _run(build, members)
        assert sorted(results["lines"]) == ["v", "w", "x y", "z"]
        assert sorted(results["rows"], key=lambda r: r["name"]) == [
            {"name": "ann", "age": "3"}, {"name": "bo", "age": "5"}]
        written = sorted(line for f in out.iterdir() for line in f.read_text().splitlines())
        assert written == ['[2, 3]', '{"a": 1}']
