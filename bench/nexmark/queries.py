"""The NEXMark queries as Jet Pipelines: ``pipeline(name, source, settings, sink)``.

Every query ends in plain tuples (window results mapped to ``(end, key, result)``), so its
output compares directly with ``oracle``'s. q4 and q6 rest on ``winning_bids`` (see there for how
it stands in for Beam's per-auction windows). Not here: q9 (Beam's WinningBids itself as output),
q10 (a GCS file sink), q15 (not asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

from jet import AggregateOperations, Pipeline, Sources, WindowDefinition

from . import functions as f
from .aggregations import all_maxima, q16_statistics, q17_statistics
from .generator import GeneratorConfig
from .winning_bids import winning_bids


@dataclass(frozen=True)
class QuerySettings:
    """Beam's window settings (windowSizeSec 10, windowPeriodSec 5; q11's session gap is the
    window size) and what the generator's configuration bounds."""

    window_ms: int = 10_000
    period_ms: int = 5_000
    processing_window_ms: int = 10_000
    allowed_lag_ms: int = 101
    max_auction_ms: int = 334

    @staticmethod
    def of(config: GeneratorConfig, window_ms: int = 10_000, period_ms: int = 5_000) -> "QuerySettings":
        """The settings for ``config``'s events (its disorder as the allowed lag)."""
        return QuerySettings(window_ms, period_ms, window_ms, config.max_disorder_ms(), config.max_auction_length_ms())


def _end_key_result(result: Any) -> tuple:
    return result.end, result.key, result.result


def _end_result(result: Any) -> tuple:
    return result.end, result.result


def _result(result: Any) -> Any:
    return result.result


def _key(result: Any) -> Any:
    return result.key


def _q5_rows(result: Any) -> tuple:
    count, auctions = result.result
    return result.end, auctions, count


def _q11_row(result: Any) -> tuple:
    return result.key, result.start, result.end, result.result


def _q12_row(result: Any) -> tuple:
    return result.key, result.result


def _q13_row(bid: Any, row: Any) -> tuple:
    return bid, row[1]


def _q19_row(result: Any) -> tuple:
    return result.key, tuple(sorted(result.result, key=f.q19_order, reverse=True))


def q0(events, s, p): return events
def q1(events, s, p): return events.filter(f.is_bid).map(f.q1_dollars_to_euros)
def q2(events, s, p): return events.filter(f.is_bid).filter(f.q2_selected).map(f.q2_projection)


def q3(events, s, p):
    persons = events.filter(f.q3_person)
    auctions = events.filter(f.q3_auction)
    return persons.merge(auctions).grouping_key(f.q3_key).flat_map_stateful(f.q3_state, f.q3_join)


def q4(events, s, p):
    # Beam averages the winning prices per category in sliding windows of the winners' expiry;
    # the winners cannot be re-stamped (see winning_bids), so each goes to the windows that hold
    # its expiry by key, ((window end, category), price), and a rolling average per key emits
    # every update, the last one being the window's result
    return (winning_bids(events, s.max_auction_ms, s.allowed_lag_ms)
            .flat_map(partial(f.q4_windowed_prices, s.window_ms, s.period_ms))
            .grouping_key(f.first).rolling_aggregate(AggregateOperations.averaging(f.second)))


def q5(events, s, p):
    counts = (events.filter(f.is_bid).grouping_key(f.key_auction)
              .window(WindowDefinition.sliding(s.window_ms, s.period_ms))
              .aggregate(AggregateOperations.counting()))
    # a sliding window's result is stamped end - 1, so each lands in the tumbling window that
    # ends where it ends
    return (counts.window(WindowDefinition.tumbling(s.period_ms))
            .aggregate(all_maxima(_result, _key)).map(_q5_rows))


def _q6_seller(auction_bid: tuple) -> int:
    return auction_bid[0].seller


def q6(events, s, p):
    return (winning_bids(events, s.max_auction_ms, s.allowed_lag_ms).grouping_key(_q6_seller)
            .map_stateful(f.new_list, f.q6_average))


def q7(events, s, p):
    return (events.filter(f.is_bid).window(WindowDefinition.tumbling(s.window_ms))
            .aggregate(all_maxima(f.price_of, f.whole)).map(_end_result))


def q8(events, s, p):
    # persons and auctions cut to the fields the result reads before they are keyed, as Flink's
    # planner projects its SQL q8 (and q4 here): the records' long strings stay where they are read
    persons = events.filter(f.is_person).map(f.q8_person).grouping_key(f.first)
    auctions = events.filter(f.is_auction).map(f.q8_auction).grouping_key(f.first)
    return persons.window(WindowDefinition.tumbling(s.window_ms)).join(auctions, f.q8_result)


def q11(events, s, p):
    # as Beam's Query11 (and Flink's SQL, projected by its planner): the bidder is taken out of
    # the bid before the sessions, so only the bidders cross to the other members
    return (events.filter(f.is_bid).map(f.bidder_of).grouping_key(lambda bidder: bidder)
            .window(WindowDefinition.session(s.window_ms))
            .aggregate(AggregateOperations.counting()).map(_q11_row))


def q12(events, s, p):
    return (events.filter(f.is_bid).map(f.bidder_of).grouping_key(lambda bidder: bidder)
            .window(WindowDefinition.tumbling(s.processing_window_ms))
            .aggregate(AggregateOperations.counting()).map(_q12_row))


def q13(events, s, p):
    side = p.read_from(Sources.items(f.q13_side_input(), "side-input"))
    return events.filter(f.is_bid).hash_join(side, f.q13_key, f.row_key, _q13_row, how="inner")


def q14(events, s, p): return events.filter(f.is_bid).filter(f.q14_selected).map(f.q14_map)


def _per_day(events, key_fn: Callable, operation) -> Any:
    # Nexmark's q16-q19 group a stream without windows, updating results forever; a day-long
    # tumbling window (the day is part of their keys anyway) gives each key's final value
    return (events.filter(f.is_bid).grouping_key(key_fn)
            .window(WindowDefinition.tumbling(f.DAY_MS)).aggregate(operation))


def q16(events, s, p): return _per_day(events, f.q16_key, q16_statistics()).map(_end_key_result)
def q17(events, s, p): return _per_day(events, f.q17_key, q17_statistics()).map(_end_key_result)
def q18(events, s, p): return _per_day(events, f.q18_key, AggregateOperations.max_by(f.latest)).map(_result)
def q19(events, s, p): return _per_day(events, f.key_auction, AggregateOperations.top_n(10, f.q19_order)).map(_q19_row)


def q20(events, s, p):
    # the auctions of category 10 (about 1 % of the events) go to every member, so the bids,
    # 92 %, are joined where they are read instead of crossing to their auction's owner
    auctions = events.filter(f.q20_auction).grouping_key(f.id_of)
    bids = events.filter(f.is_bid).grouping_key(f.key_auction)
    return auctions.interval_join(bids, 0, s.max_auction_ms, f.q20_result, broadcast="left")


def q21(events, s, p): return events.filter(f.is_bid).map(f.q21_map).filter(f.is_not_none)
def q22(events, s, p): return events.filter(f.is_bid).map(f.q22_map)


QUERIES: dict[str, Callable] = {name: fn for name, fn in globals().items()
                                if name[0] == "q" and name[1:].isdigit()}


def pipeline(name: str, source: Any, settings: QuerySettings, sink: Any) -> Pipeline:
    """Query ``name`` over ``source``'s events, written to ``sink``."""
    p = Pipeline.create()
    read = p.read_from(source)
    events = read.with_ingestion_timestamps() if name == "q12" else read.with_native_timestamps(settings.allowed_lag_ms)
    QUERIES[name](events, settings, p).write_to(sink)
    return p
