"""Beam's WinningBids (q4, q6) on the Pipeline API: per auction, the highest bid made while it
was open (``date_time <= bid < expires``) at or above its reserve, earlier bids first among
equal prices; none if no bid qualifies.

Beam closes each auction at its expiry with a window of its own. The Pipeline API has no
per-key event-time timer, so the auction's state (and the bids that came before their auction)
sits in ``flat_map_stateful`` with a TTL longer than any auction, and the winner is emitted
when the key is evicted: after its expiry, stamped with the watermark that evicted it (or the
end of time when the stream ends), not Beam's ``expires - 1``; ``add_timestamps`` cannot
re-stamp a stream that has timestamps. Queries on the winners therefore key by what they need
of the auction instead of windowing them (see q4).

Auctions and bids are projected to the fields WinningBids, q4 and q6 read before they are keyed,
so only those cross to other members: Flink's planner does the same for its SQL q4 (which
selects ``A.id, A.category, A.dateTime, A.expires, B.auction, B.price, B.dateTime``), and
Hazelcast Jet's own NEXMark benchmark carries bids as four longs. The winners' prices, times and
auctions' categories and sellers, all that the queries output, are unchanged.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .model import Auction, Bid


class AuctionTerms(NamedTuple):
    """What WinningBids and its queries read of an auction."""

    id: int
    date_time: int
    expires: int
    reserve: int
    seller: int
    category: int


class BidOffer(NamedTuple):
    """What WinningBids and its queries read of a bid."""

    auction: int
    price: int
    date_time: int


def project(event: Auction | Bid) -> AuctionTerms | BidOffer:
    """``event`` cut to the fields WinningBids reads (an auction or a bid only)."""
    if type(event) is Bid:
        return BidOffer(event.auction, event.price, event.date_time)
    return AuctionTerms(event.id, event.date_time, event.expires, event.reserve, event.seller, event.category)


def qualifies(auction: AuctionTerms, bid: BidOffer) -> bool:
    return auction.date_time <= bid.date_time < auction.expires and bid.price >= auction.reserve


def rank(bid: BidOffer) -> tuple:
    """Higher is better: the price, then the earlier time (equal offers are interchangeable)."""
    return bid.price, -bid.date_time


def auction_id(event: AuctionTerms | BidOffer) -> int:
    return event.id if type(event) is AuctionTerms else event.auction


def is_auction_or_bid(event: Any) -> bool:
    return type(event) is Auction or type(event) is Bid


def create() -> list:
    """``[auction or None, best bid or None, bids that came before their auction]``."""
    return [None, None, []]


def _consider(state: list, bid: BidOffer) -> None:
    if qualifies(state[0], bid) and (state[1] is None or rank(bid) > rank(state[1])):
        state[1] = bid


def accumulate(state: list, key: int, event: AuctionTerms | BidOffer) -> tuple:
    if type(event) is AuctionTerms:
        state[0] = event
        for bid in state[2]:
            _consider(state, bid)
        state[2] = []
        return ()
    auction = state[0]
    if auction is None:
        state[2].append(event)
    # _consider inlined (this runs for every bid): qualifies, and ranks above the best so far
    elif auction.date_time <= event.date_time < auction.expires and event.price >= auction.reserve:
        best = state[1]
        if best is None or event.price > best.price or (event.price == best.price
                                                        and event.date_time < best.date_time):
            state[1] = event
    return ()


def on_evict(state: list, key: int, watermark: int) -> tuple:
    return ((state[0], state[1]),) if state[1] is not None else ()


def winning_bids(events, max_auction_ms: int, allowed_lag_ms: int):
    """The stream of ``(AuctionTerms, winning BidOffer)`` pairs."""
    # an auction's last bid comes before it expires (or is too late to count), and a bid made
    # before its auction is at most the lag early: after this TTL a key holds nothing to wait for
    ttl_ms = 2 * max_auction_ms + allowed_lag_ms
    return (events.filter(is_auction_or_bid).map(project).grouping_key(auction_id)
            .flat_map_stateful(ttl_ms, create, accumulate, on_evict))
