"""Plain getter lambdas run as their C twins (operator.itemgetter / attrgetter), with the same
results as the lambdas and, when they fail, the user's own error and frame."""

import operator
from collections import defaultdict
from types import SimpleNamespace

import pytest

from jet import AggregateOperations as A, Pipeline, Sinks, Sources
from jet.core.functions import getter_twin, map_each
from jet.execution import JobFailedError, execute

HERE = __file__
ROWS = [(i % 13, i * 0.5, f"name{i % 5}") for i in range(5000)]


@pytest.mark.parametrize("fn, twin", [
    (lambda row: row[0], operator.itemgetter(0)),
    (lambda row: row[-1], operator.itemgetter(-1)),
    (lambda record: record["key"], operator.itemgetter("key")),
    (lambda event: event.user, operator.attrgetter("user")),
])
def test_a_plain_getter_has_a_c_twin(fn, twin):
    assert repr(getter_twin(fn)) == repr(twin)


INDEX = 1


@pytest.mark.parametrize("fn", [
    lambda row: row[0] + 1,               # more than a getter
    lambda row: row[INDEX],               # a global index may change
    lambda row, i=1: row[i],              # two parameters
    lambda *rows: rows[0],                # varargs
    lambda row: row[1:2],                 # a slice
    lambda row: row.key.upper(),          # a call
    (lambda i: lambda row: row[i])(0),    # a closure
    len,                                  # already C
    operator.itemgetter(0),
])
def test_anything_else_has_none(fn):
    assert getter_twin(fn) is None


def test_mapping_with_the_twin_gives_what_the_lambda_gives():
    rows = [(i, str(i)) for i in range(100)]
    records = [{"key": i} for i in range(100)]
    events = [SimpleNamespace(user=f"u{i}") for i in range(100)]
    assert list(map_each(lambda row: row[1], rows)) == [str(i) for i in range(100)]
    assert list(map_each(lambda record: record["key"], records)) == list(range(100))
    assert list(map_each(lambda event: event.user, events)) == [f"u{i}" for i in range(100)]
    assert list(map_each(lambda row: row[0] * 2, rows)) == [i * 2 for i in range(100)]


def test_a_failing_getter_raises_from_the_users_lambda():
    rows = [(1, 2), (3,), (4, 5)]
    with pytest.raises(IndexError) as failure:
        list(map_each(lambda row: row[1], rows))
    last = failure.traceback[-1]
    assert (str(last.path), last.name) == (HERE, "<lambda>")
    assert failure.value.__context__ is None  # nothing of the twin's attempt in the user's error


def test_grouping_and_summing_by_getters_match_plain_python():
    p = Pipeline.create()
    (p.read_from(Sources.items(ROWS)).grouping_key(lambda row: row[2])
     .aggregate(A.all_of(A.summing(lambda row: row[1]), A.counting(), A.averaging(lambda row: row[0])))
     .write_to(Sinks.list()))
    results = execute(p.to_dag(2), timeout=30)["default"]
    expected = defaultdict(list)
    for row in ROWS:
        expected[row[2]].append(row)
    assert {key: (total, count, average) for key, (total, count, average) in results} == {
        key: (sum(r[1] for r in rows), len(rows), sum(r[0] for r in rows) / len(rows))
        for key, rows in expected.items()}


def test_a_job_whose_getter_fails_shows_the_users_lambda_first():
    p = Pipeline.create()
    (p.read_from(Sources.items([(1, 2.0)] * 100 + [(1,)])).grouping_key(lambda row: row[0])
     .aggregate(A.summing(lambda row: row[1])).write_to(Sinks.list()))
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    text = failure.value.traceback_text
    assert text.startswith(f'Traceback (most recent call last):\n  File "{HERE}"'), text
    assert "summing(lambda row: row[1])" in text
    assert "IndexError: tuple index out of range" in text
