"""The queries' own aggregate operations (Jet's ``AggregateOperation`` primitives)."""

from __future__ import annotations

from typing import Any, Callable

from jet import AggregateOperation

from .functions import RANK1_BELOW, RANK2_BELOW, minute_of, rank


def all_maxima(value_fn: Callable[[Any], Any], item_fn: Callable[[Any], Any]) -> AggregateOperation:
    """``(max value, sorted item_fn(item) of every item with that value)``: q5's hottest
    auctions and q7's highest bids, ties included, as Beam's queries give them."""

    def create() -> list:
        return [None, []]

    def accumulate(acc: list, item: Any) -> list:
        value = value_fn(item)
        if acc[0] is None or value > acc[0]:
            acc[0], acc[1] = value, [item_fn(item)]
        elif value == acc[0]:
            acc[1].append(item_fn(item))
        return acc

    def combine(acc: list, other: list) -> list:
        if other[0] is None or (acc[0] is not None and other[0] < acc[0]):
            return acc
        if acc[0] is None or other[0] > acc[0]:
            return [other[0], list(other[1])]
        acc[1].extend(other[1])
        return acc

    def finish(acc: list) -> tuple:
        return acc[0], tuple(sorted(acc[1]))

    return AggregateOperation(create, accumulate, combine, finish, name="all-maxima")


def _q16_create() -> list:
    # [latest timestamp, counts of ranks 1..3, bidder sets of ranks 1..3, auction sets of ranks
    # 1..3] (index 0 unused); all ranks together are the sums and unions, made once in finish
    # rather than per bid. A key's bids are of one day, so its latest minute is the minute of its
    # latest timestamp (formatted once, in finish, not per bid).
    return [-1, [0, 0, 0, 0], [None, set(), set(), set()], [None, set(), set(), set()]]


def _q16_accumulate(acc: list, bid: Any) -> list:
    if bid.date_time > acc[0]:
        acc[0] = bid.date_time
    price = bid.price
    r = 1 if price < RANK1_BELOW else 2 if price < RANK2_BELOW else 3
    acc[1][r] += 1
    acc[2][r].add(bid.bidder)
    acc[3][r].add(bid.auction)
    return acc


def _q16_combine(acc: list, other: list) -> list:
    acc[0] = max(acc[0], other[0])
    for r in range(1, 4):
        acc[1][r] += other[1][r]
        acc[2][r] |= other[2][r]
        acc[3][r] |= other[3][r]
    return acc


def _q16_finish(acc: list) -> tuple:
    counts, bidders, auctions = acc[1][1:], acc[2][1:], acc[3][1:]
    return (minute_of(acc[0]), sum(counts), *counts, len(set().union(*bidders)), *map(len, bidders),
            len(set().union(*auctions)), *map(len, auctions))


def q16_statistics() -> AggregateOperation:
    """Nexmark's q16 per channel and day: the last minute, bids, distinct bidders and distinct
    auctions, in all and per price rank."""
    return AggregateOperation(_q16_create, _q16_accumulate, _q16_combine, _q16_finish, name="q16")


def _q17_create() -> list:
    return [0, 0, 0, 0, None, None, 0]  # bids, rank 1..3 bids, min, max, sum


def _q17_accumulate(acc: list, bid: Any) -> list:
    price = bid.price
    acc[0] += 1
    acc[rank(price)] += 1
    acc[4] = price if acc[4] is None or price < acc[4] else acc[4]
    acc[5] = price if acc[5] is None or price > acc[5] else acc[5]
    acc[6] += price
    return acc


def _q17_combine(acc: list, other: list) -> list:
    for i in range(4):
        acc[i] += other[i]
    if other[4] is not None:
        acc[4] = other[4] if acc[4] is None else min(acc[4], other[4])
        acc[5] = other[5] if acc[5] is None else max(acc[5], other[5])
    acc[6] += other[6]
    return acc


def _q17_finish(acc: list) -> tuple:
    # Flink's AVG of a BIGINT is a BIGINT: the sum divided by the count, truncated
    return (*acc[:6], acc[6] // acc[0], acc[6])


def q17_statistics() -> AggregateOperation:
    """Nexmark's q17 per auction and day: bids in all and per rank, min, max, avg and sum of price."""
    return AggregateOperation(_q17_create, _q17_accumulate, _q17_combine, _q17_finish, name="q17")
