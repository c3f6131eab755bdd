"""The NEXMark queries in plain Python over the whole list of events: the tests' oracle and the
runner's plain-Python column. ``answer(name, events, settings)`` gives the multiset (a Counter)
of what ``queries.pipeline(name, ...)`` writes; ``normalized(name, output)`` makes a Jet or
Bytewax output comparable with it."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from . import functions as f
from .model import Auction, Bid, Person
from .queries import QuerySettings


def _bids(events: list) -> list[Bid]:
    return [e for _, e in events if type(e) is Bid]


def _of(events: list, kind: type) -> list:
    return [e for _, e in events if type(e) is kind]


def q0(events, s): return Counter(e for _, e in events)
def q1(events, s): return Counter(f.q1_dollars_to_euros(b) for b in _bids(events))
def q2(events, s): return Counter((b.auction, b.price) for b in _bids(events) if b.auction % f.AUCTION_SKIP == 0)


def q3(events, s):
    persons = {p.id: p for p in _of(events, Person) if p.state in f.Q3_STATES}
    return Counter((persons[a.seller].name, persons[a.seller].city, persons[a.seller].state, a.id)
                   for a in _of(events, Auction) if a.category == f.Q3_CATEGORY and a.seller in persons)


def _winning_bids(events: list) -> list[tuple[Auction, Bid]]:
    """Beam's WinningBids straight from its definition: every auction's best qualifying bid."""
    bids = defaultdict(list)
    for b in _bids(events):
        bids[b.auction].append(b)
    winners = []
    for a in _of(events, Auction):
        valid = [b for b in bids.get(a.id, ()) if a.date_time <= b.date_time < a.expires and b.price >= a.reserve]
        if valid:
            best_price = max(b.price for b in valid)
            earliest = min(b.date_time for b in valid if b.price == best_price)
            winners.append((a, max(b for b in valid if b.price == best_price and b.date_time == earliest)))
    return winners


def q4(events, s):
    prices = defaultdict(list)
    for a, b in _winning_bids(events):
        for end in f.window_ends(a.expires - 1, s.window_ms, s.period_ms):
            prices[(end, a.category)].append(b.price)
    return Counter((key, sum(p) / len(p)) for key, p in prices.items())


def q6(events, s):
    per_seller = defaultdict(list)
    for a, b in _winning_bids(events):
        per_seller[a.seller].append(b)
    out = Counter()
    for seller, bids in per_seller.items():
        latest = sorted(bids, key=lambda b: (b.date_time, b.price))[-f.Q6_BIDS:]
        out[(seller, sum(b.price for b in latest) / len(latest))] += 1
    return out


def q5(events, s):
    counts: dict = defaultdict(Counter)
    for b in _bids(events):
        for end in f.window_ends(b.date_time, s.window_ms, s.period_ms):
            counts[end][b.auction] += 1
    out = Counter()
    for end, per_auction in counts.items():
        most = max(per_auction.values())
        out[(end, tuple(sorted(a for a, n in per_auction.items() if n == most)), most)] += 1
    return out


def q7(events, s):
    windows: dict = defaultdict(list)
    for b in _bids(events):
        windows[b.date_time - b.date_time % s.window_ms + s.window_ms].append(b)
    out = Counter()
    for end, bids in windows.items():
        best = max(b.price for b in bids)
        out[(end, (best, tuple(sorted(b for b in bids if b.price == best))))] += 1
    return out


def q8(events, s):
    def window(e): return e.date_time // s.window_ms
    persons = defaultdict(list)
    for p in _of(events, Person):
        persons[(window(p), p.id)].append(p)
    return Counter((p.id, p.name, a.reserve) for a in _of(events, Auction)
                   for p in persons.get((window(a), a.seller), ()))


def q11(events, s):
    times = defaultdict(list)
    for b in _bids(events):
        times[b.bidder].append(b.date_time)
    out = Counter()
    for bidder, stamps in times.items():
        stamps.sort()
        start = last = stamps[0]
        count = 0
        for ts in stamps:
            if ts - last >= s.window_ms:
                out[(bidder, start, last + s.window_ms, count)] += 1
                start, count = ts, 0
            last, count = ts, count + 1
        out[(bidder, start, last + s.window_ms, count)] += 1
    return out


def q12(events, s): return Counter(b.bidder for b in _bids(events))
def q13(events, s): return Counter((b, str(b.bidder % f.SIDE_INPUT_ROWS)) for b in _bids(events))
def q14(events, s): return Counter(f.q14_map(b) for b in _bids(events) if 1_000_000 < 0.908 * b.price < 50_000_000)


def _per_day(events: list, key_fn: Callable, result_fn: Callable[[list], Any]) -> Counter:
    groups = defaultdict(list)
    for b in _bids(events):
        groups[key_fn(b)].append(b)
    return Counter(((key[-1] + 1) * f.DAY_MS, key, result_fn(bids)) for key, bids in groups.items())


def _by_rank(bids: list, r: int) -> list:
    return bids if r == 0 else [b for b in bids if f.rank(b.price) == r]


def q16(events, s):
    def stats(bids):
        ranks = [_by_rank(bids, r) for r in range(4)]
        return (max(f.minute_of(b.date_time) for b in bids), *map(len, ranks),
                *(len({b.bidder for b in group}) for group in ranks),
                *(len({b.auction for b in group}) for group in ranks))
    return _per_day(events, lambda b: (b.channel, b.date_time // f.DAY_MS), stats)


def q17(events, s):
    def stats(bids):
        prices = [b.price for b in bids]
        return (len(bids), *(len(_by_rank(bids, r)) for r in (1, 2, 3)), min(prices), max(prices),
                sum(prices) // len(prices), sum(prices))
    return _per_day(events, lambda b: (b.auction, b.date_time // f.DAY_MS), stats)


def q18(events, s):
    last: dict = {}
    for b in _bids(events):
        key = (b.bidder, b.auction)
        if key not in last or (b.date_time, b) > (last[key].date_time, last[key]):
            last[key] = b
    return Counter(last.values())


def q19(events, s):
    groups = defaultdict(list)
    for b in _bids(events):
        groups[b.auction].append(b)
    return Counter((auction, tuple(sorted(bids, key=lambda b: (b.price, b), reverse=True)[:10]))
                   for auction, bids in groups.items())


def q20(events, s):
    auctions = {a.id: a for a in _of(events, Auction) if a.category == f.Q20_CATEGORY}
    return Counter(f.q20_result(auctions[b.auction], b) for b in _bids(events)
                   if b.auction in auctions and auctions[b.auction].date_time <= b.date_time <= auctions[b.auction].expires)


def q21(events, s): return Counter(r for r in map(f.q21_map, _bids(events)) if r is not None)
def q22(events, s): return Counter(map(f.q22_map, _bids(events)))


ORACLES: dict[str, Callable] = {name: fn for name, fn in globals().items()
                                if name[0] == "q" and name[1:].isdigit()}


def answer(name: str, events: list, settings: QuerySettings) -> Counter:
    """What query ``name`` outputs over ``events``, as a multiset."""
    return ORACLES[name](events, settings)


def normalized(name: str, output: Iterable[Any]) -> Counter:
    """``output`` as a multiset comparable with ``answer``: q4 and q6 emit a key's result anew
    with every winning bid, so only each key's last counts; q12's processing-time windows
    cannot be predicted, so its per-window counts are summed per bidder."""
    if name in ("q4", "q6"):
        return Counter(dict(output).items())
    if name != "q12":
        return Counter(output)
    totals: Counter = Counter()
    for bidder, count in output:
        totals[bidder] += count
    return totals
