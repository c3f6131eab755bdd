"""The per-item functions the queries share, written once for Jet, the oracle and Bytewax, so
the three differ in how they run the queries, never in what an item becomes."""

from __future__ import annotations

import re
import time
from typing import Any

from .model import Auction, Bid, Person

AUCTION_SKIP = 123              # Beam's auctionSkip (q2)
SIDE_INPUT_ROWS = 500           # Beam's sideInputRowCount (q13)
Q3_STATES = ("OR", "ID", "CA")
Q3_CATEGORY = 10
Q20_CATEGORY = 10
RANK1_BELOW, RANK2_BELOW = 10_000, 1_000_000   # Nexmark's q15-q17 price ranks
_CHANNEL_ID = re.compile(r"(&|^)channel_id=([^&]*)")
_Q21_CHANNELS = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
DAY_MS = 86_400_000


def is_bid(event: Any) -> bool:
    return type(event) is Bid


def is_person(event: Any) -> bool:
    return type(event) is Person


def is_auction(event: Any) -> bool:
    return type(event) is Auction


def q1_dollars_to_euros(bid: Bid) -> Bid:
    # Built directly: namedtuple._replace costs over twice as much (41 % of q1 with it)
    return Bid(bid.auction, bid.bidder, bid.price * 89 // 100, bid.channel, bid.url, bid.date_time, bid.extra)


def q2_selected(bid: Bid) -> bool:
    return bid.auction % AUCTION_SKIP == 0


def q2_projection(bid: Bid) -> tuple[int, int]:
    return bid.auction, bid.price


def q3_person(event: Any) -> bool:
    return type(event) is Person and event.state in Q3_STATES


def q3_auction(event: Any) -> bool:
    return type(event) is Auction and event.category == Q3_CATEGORY


def q3_key(event: Person | Auction) -> int:
    return event.id if type(event) is Person else event.seller


def q3_result(person: Person, auction: Auction) -> tuple[str, str, str, int]:
    return person.name, person.city, person.state, auction.id


def q3_state() -> list:
    """``[person or None, auctions waiting for their seller]``."""
    return [None, []]


def q3_join(state: list, key: int, event: Person | Auction) -> list:
    """Beam's q3 join of one event: a person meets the auctions that waited for it; an auction
    meets its seller if seen, else waits."""
    if type(event) is Person:
        state[0] = event
        waiting, state[1] = state[1], []
        return [q3_result(event, auction) for auction in waiting]
    if state[0] is not None:
        return [q3_result(state[0], event)]
    state[1].append(event)
    return []


def q8_person(person: Person) -> tuple[int, str]:
    """What q8 reads of a person: its id (the key) and name."""
    return person.id, person.name


def q8_auction(auction: Auction) -> tuple[int, int]:
    """What q8 reads of an auction: its seller (the key) and reserve."""
    return auction.seller, auction.reserve


def q8_result(person: tuple[int, str], auction: tuple[int, int]) -> tuple[int, str, int]:
    """Beam's q8 row of a projected person and auction (:func:`q8_person`, :func:`q8_auction`)."""
    return person[0], person[1], auction[1]


def q13_side_input() -> list[tuple[int, str]]:
    return [(i, str(i)) for i in range(SIDE_INPUT_ROWS)]


def q13_key(bid: Bid) -> int:
    return bid.bidder % SIDE_INPUT_ROWS


def q14_map(bid: Bid) -> tuple:
    """Nexmark's q14: price in another currency, the bid's time of day, the 'c's of ``extra``."""
    hour = bid.date_time // 3_600_000 % 24
    if 8 <= hour <= 18:
        kind = "dayTime"
    elif hour <= 6 or hour >= 20:
        kind = "nightTime"
    else:
        kind = "otherTime"
    return bid.auction, bid.bidder, 0.908 * bid.price, kind, bid.date_time, bid.extra, bid.extra.count("c")


def q14_selected(bid: Bid) -> bool:
    return 1_000_000 < 0.908 * bid.price < 50_000_000


def day_of(timestamp_ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(timestamp_ms // 1000))


def minute_of(timestamp_ms: int) -> str:
    return time.strftime("%H:%M", time.gmtime(timestamp_ms // 1000))


def rank(price: int) -> int:
    """1, 2 or 3: Nexmark's price ranks."""
    return 1 if price < RANK1_BELOW else 2 if price < RANK2_BELOW else 3


def q16_key(bid: Bid) -> tuple[str, int]:
    return bid.channel, bid.date_time // DAY_MS


def q17_key(bid: Bid) -> tuple[int, int]:
    return bid.auction, bid.date_time // DAY_MS


def q18_key(bid: Bid) -> tuple[int, int]:
    return bid.bidder, bid.auction


def latest(bid: Bid) -> tuple:
    """q18's order: the latest bid, ties broken by the whole bid so the answer is unique."""
    return bid.date_time, bid


def q19_order(bid: Bid) -> tuple:
    """q19's order: the highest price, ties broken by the whole bid."""
    return bid.price, bid


def q20_result(auction: Auction, bid: Bid) -> tuple | None:
    """Nexmark's q20: a bid with its auction while the auction is open, for category 10."""
    if bid.date_time > auction.expires:
        return None
    return bid.auction, bid.bidder, bid.price, bid.channel, bid.url, bid.date_time, \
        auction.item_name, auction.description, auction.initial_bid, auction.reserve, \
        auction.date_time, auction.expires, auction.seller, auction.category


def q20_auction(event: Any) -> bool:
    return type(event) is Auction and event.category == Q20_CATEGORY


def q21_map(bid: Bid) -> tuple | None:
    """Nexmark's q21: the channel's id, from the channel's name or the URL; None without one."""
    channel_id = _Q21_CHANNELS.get(bid.channel.lower())
    if channel_id is None:
        found = _CHANNEL_ID.search(bid.url)
        if found is None:
            return None
        channel_id = found.group(2)
    return bid.auction, bid.bidder, bid.price, bid.channel, channel_id


def q22_map(bid: Bid) -> tuple:
    """Nexmark's q22: the URL's first three directories (``SPLIT_INDEX(url, '/', 3..5)``)."""
    parts = bid.url.split("/")
    return bid.auction, bid.bidder, bid.price, bid.channel, *(parts[i] if i < len(parts) else None for i in (3, 4, 5))


def key_auction(bid: Bid) -> int:
    return bid.auction


def bidder_of(bid: Bid) -> int:
    return bid.bidder


def price_of(bid: Bid) -> int:
    return bid.price


def id_of(event: Person | Auction) -> int:
    return event.id


def seller_of(auction: Auction) -> int:
    return auction.seller


def row_key(row: tuple) -> Any:
    return row[0]


def whole(item: Any) -> Any:
    return item


def is_not_none(item: Any) -> bool:
    return item is not None


def first(pair: tuple) -> Any:
    return pair[0]


def second(pair: tuple) -> Any:
    return pair[1]


def new_list() -> list:
    return []


Q6_BIDS = 10  # Beam's maxNumBids: how many of a seller's latest winning bids q6 averages


def q6_average(latest: list, seller: int, auction_bid: tuple) -> tuple[int, float]:
    """Beam's q6: the seller's average price over its latest 10 winning bids (by time, then price)."""
    bid = auction_bid[1]
    latest.append(bid)
    latest.sort(key=lambda b: (b.date_time, b.price))
    del latest[:-Q6_BIDS]
    return seller, sum(b.price for b in latest) / len(latest)


def window_ends(ts: int, size_ms: int, slide_ms: int) -> range:
    """Ends of the windows ``[end - size, end)`` aligned to ``slide_ms`` that hold ``ts``."""
    first_end = ts - ts % slide_ms + slide_ms
    return range(first_end, first_end + size_ms, slide_ms)


def q4_windowed_prices(size_ms: int, slide_ms: int, auction_bid: tuple) -> list[tuple]:
    """``((window end, category), price)`` for each window holding the auction's expiry."""
    auction, bid = auction_bid
    return [((end, auction.category), bid.price) for end in window_ends(auction.expires - 1, size_ms, slide_ms)]
