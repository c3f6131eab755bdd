"""NEXMark (bench/nexmark): every query's Jet pipeline against the plain-Python oracle over the
same generated events, on one member in this process and on two member processes; and the
generator against Beam's rules."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # before any local cluster starts: members import nexmark too

import jet  # noqa: E402
from jet import Sinks  # noqa: E402
from jet.execution import execute  # noqa: E402
from nexmark import oracle  # noqa: E402
from nexmark.events import generated, write_shares  # noqa: E402
from nexmark.generator import TOTAL_PROPORTION, GeneratorConfig, event  # noqa: E402
from nexmark.java_random import JavaRandom  # noqa: E402
from nexmark.model import Auction, Bid, Person  # noqa: E402
from nexmark.queries import QUERIES, QuerySettings, pipeline  # noqa: E402
from nexmark.source import nexmark_source  # noqa: E402

CONFIG = GeneratorConfig(events=12_000, out_of_order_group_size=500)
SETTINGS = QuerySettings.of(CONFIG, window_ms=400, period_ms=200)
NAMES = sorted(QUERIES, key=lambda name: int(name[1:]))


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> list:
    return generated(CONFIG, tmp_path_factory.mktemp("nexmark-cache"))


@pytest.fixture(scope="module")
def two_members():
    with jet.local_cluster(members=2) as cluster:
        yield cluster


def _check(name: str, output: list, events: list) -> None:
    got, wanted = oracle.normalized(name, output), oracle.answer(name, events, SETTINGS)
    assert sum(wanted.values()) > 0, f"{name}: the oracle's answer is empty, the test checks nothing"
    assert got == wanted, f"{name}: {sum(got.values())} results, {sum(wanted.values())} expected; " \
                          f"extra {list((got - wanted).items())[:2]}, missing {list((wanted - got).items())[:2]}"


@pytest.mark.parametrize("name", NAMES)
def test_query_on_one_member_in_process(name, events, tmp_path):
    p = pipeline(name, nexmark_source(write_shares(events, 1, tmp_path)), SETTINGS, Sinks.list("out"))
    p.preflight()
    _check(name, execute(p.to_dag(1), cooperative_threads=1, timeout=60)["out"], events)


@pytest.mark.parametrize("name", NAMES)
def test_query_on_two_members(name, events, two_members, tmp_path):
    p = pipeline(name, nexmark_source(write_shares(events, 2, tmp_path)), SETTINGS, Sinks.list("out"))
    job = two_members.new_job(p)
    job.join(timeout=60)
    _check(name, job.result("out"), events)


def test_proportions_ids_and_disorder_follow_beam(events):
    kinds = Counter(type(e) for _, e in events)
    assert kinds == {Person: 240, Auction: 720, Bid: 11_040}  # 1 : 3 : 46 of every 50 ids
    persons = [e.id for _, e in events if type(e) is Person]
    assert sorted(persons) == list(range(1000, 1000 + len(persons)))
    auctions = [e.id for _, e in events if type(e) is Auction]
    assert sorted(auctions) == list(range(1000, 1000 + len(auctions)))
    newest = 0
    for ts, e in events:
        assert ts == e.date_time
        assert newest - ts < CONFIG.max_disorder_ms()
        newest = max(newest, ts)
    assert max(e.expires - e.date_time for _, e in events if type(e) is Auction) <= CONFIG.max_auction_length_ms()


def test_java_random_gives_what_java_util_random_gives():
    # values of OpenJDK's java.util.Random for these seeds
    assert [JavaRandom(42)._next(32), JavaRandom(0)._next(32)] == [-1170105035, -1155484576]
    assert JavaRandom(42).next_double() == 0.7275636800328681
    assert JavaRandom(42).next_long() == -5025562857975149833
    assert JavaRandom(42).next_int(10) == 1_562_431_130 % 10  # nextInt(bound) is next(31) % bound here


def test_an_event_depends_only_on_its_number_and_the_seed():
    assert event(4321, CONFIG) == event(4321, CONFIG)
    assert event(4321, CONFIG) != event(4321, GeneratorConfig(events=12_000, out_of_order_group_size=500, seed=1))
    in_order = GeneratorConfig(out_of_order_group_size=1)
    # with no disorder, event n has id n: the first of every 50 is a person, the next 3 auctions
    assert [type(event(n, in_order)[1]) for n in range(TOTAL_PROPORTION)] == [Person] + [Auction] * 3 + [Bid] * 46


def test_bytewax_queries_match_the_oracle(events):
    bytewax_queries = pytest.importorskip("nexmark.bytewax_queries")
    pairs = bytewax_queries.timestamped(events)
    for name in bytewax_queries.QUERIES:
        _check(name, bytewax_queries.run(name, pairs, SETTINGS)[1], events)
