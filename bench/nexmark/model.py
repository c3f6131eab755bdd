"""The NEXMark events, with Beam's fields (``org.apache.beam.sdk.nexmark.model``).

Times are epoch milliseconds; prices are cents (Beam's ``long``).
"""

from __future__ import annotations

from typing import NamedTuple


class Person(NamedTuple):
    """A new person registered at the auction site."""

    id: int
    name: str
    email_address: str
    credit_card: str
    city: str
    state: str
    date_time: int
    extra: str


class Auction(NamedTuple):
    """A new item put up for auction, open from ``date_time`` until ``expires``."""

    id: int
    item_name: str
    description: str
    initial_bid: int
    reserve: int
    date_time: int
    expires: int
    seller: int
    category: int
    extra: str


class Bid(NamedTuple):
    """A bid of ``price`` for ``auction`` by the person ``bidder``."""

    auction: int
    bidder: int
    price: int
    channel: str
    url: str
    date_time: int
    extra: str
