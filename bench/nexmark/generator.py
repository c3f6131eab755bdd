"""Beam's NEXMark generator (``org.apache.beam.sdk.nexmark.sources.generator``), in Python.

Event ``n`` (in emission order) gets the *adjusted* number ``a(n)``: events are permuted within
groups of ``out_of_order_group_size`` (Beam's ``nextAdjustedEventNumber``), so timestamps are out
of order by less than one group's span; its id is ``a(n)``, its time ``base + a(n) * 1000 //
rate`` ms, and its kind and fields come from a ``java.util.Random`` seeded with the id: persons,
auctions and bids in Beam's proportions 1:3:46 of every 50 ids, with Beam's id arithmetic (hot
sellers, auctions and bidders, in-flight auctions, active people), prices and strings.

Two departures, both outside what any query reads: ``extra`` has the length Beam draws but its
letters are a slice of one fixed text (Beam draws a letter per byte, the cost of the whole
generator in Python), and the hot URLs and channel URLs are drawn from ``Random``s seeded by
their index (Beam's come from an unseeded ``Random``, different in every run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from .java_random import JavaRandom
from .model import Auction, Bid, Person

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
HOT_SELLER_RATIO = HOT_AUCTION_RATIO = HOT_BIDDER_RATIO = 100
HOT_CHANNELS_RATIO = 2
CHANNELS_NUMBER = 10_000
MIN_STRING_LENGTH = 3
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
             "Seattle", "Kent", "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
               "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")


@dataclass(frozen=True)
class GeneratorConfig:
    """Beam's ``NexmarkConfiguration`` fields the generator reads (Beam's defaults, except a fixed
    ``base_time_ms`` and a ``seed`` mixed into every event's ``Random``; 0 gives Beam's events)."""

    events: int = 100_000
    rate: int = 10_000                      # events per second of event time (firstEventRate)
    out_of_order_group_size: int = 1_000    # Beam's default is 1: no disorder
    base_time_ms: int = 1_767_225_600_000   # 2026-01-01T00:00:00Z
    seed: int = 0
    num_in_flight_auctions: int = 100
    num_active_people: int = 1_000
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100

    def timestamp(self, event_number: int) -> int:
        """Event time of event number ``event_number`` (Beam's ``timestampAndInterEventDelayUsForEvent``)."""
        return self.base_time_ms + event_number * 1000 // self.rate

    def adjusted(self, count: int) -> int:
        """The id of the ``count``-th event emitted (Beam's ``nextAdjustedEventNumber``)."""
        n = self.out_of_order_group_size
        return count // n * n + count * 953 % n

    def max_disorder_ms(self) -> int:
        """How far an event's time can be behind an event emitted before it."""
        return self.out_of_order_group_size * 1000 // self.rate + 1

    def max_auction_length_ms(self) -> int:
        """An upper bound of ``expires - date_time`` (see ``_auction_length``)."""
        horizon_events = self.num_in_flight_auctions * TOTAL_PROPORTION // AUCTION_PROPORTION
        return 2 * (horizon_events * 1000 // self.rate + 1)


def last_base0_person_id(event_id: int) -> int:
    epoch, offset = divmod(event_id, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + min(offset, PERSON_PROPORTION - 1)


def last_base0_auction_id(event_id: int) -> int:
    epoch, offset = divmod(event_id, TOTAL_PROPORTION)
    if offset < PERSON_PROPORTION:
        epoch -= 1
        offset = AUCTION_PROPORTION - 1
    elif offset >= PERSON_PROPORTION + AUCTION_PROPORTION:
        offset = AUCTION_PROPORTION - 1
    else:
        offset -= PERSON_PROPORTION
    return epoch * AUCTION_PROPORTION + offset


def _next_long(random: JavaRandom, n: int) -> int:
    return random.next_int(n) if n < (1 << 31) - 1 else abs(random.next_long() % n)


def _next_base0_person_id(event_id: int, random: JavaRandom, config: GeneratorConfig) -> int:
    num_people = last_base0_person_id(event_id) + 1
    active = min(num_people, config.num_active_people)
    return num_people - active + _next_long(random, active + PERSON_ID_LEAD)


def _next_base0_auction_id(event_id: int, random: JavaRandom, config: GeneratorConfig) -> int:
    max_auction = last_base0_auction_id(event_id)
    min_auction = max(max_auction - config.num_in_flight_auctions, 0)
    return min_auction + _next_long(random, max_auction - min_auction + 1 + AUCTION_ID_LEAD)


def _next_string(random: JavaRandom, max_length: int, special: str = " ") -> str:
    length = MIN_STRING_LENGTH + random.next_int(max_length - MIN_STRING_LENGTH)
    chars = []
    for _ in range(length):
        chars.append(special if random.next_int(13) == 0 else chr(97 + random.next_int(26)))
    return "".join(chars).strip()


def _fixed_text(length: int) -> str:
    random = JavaRandom(20_260_101)
    return "".join(chr(97 + random.next_int(26)) for _ in range(length))


_EXTRA_TEXT = _fixed_text(8192)


def _next_extra(random: JavaRandom, event_id: int, current_size: int, desired_average: int) -> str:
    if current_size > desired_average:
        return ""
    desired_average -= current_size
    delta = int(desired_average * 0.2 + 0.5)
    size = desired_average - delta + (random.next_int(2 * delta) if delta else 0)
    start = event_id % (len(_EXTRA_TEXT) - size)
    return _EXTRA_TEXT[start:start + size]


def _next_price(random: JavaRandom) -> int:
    return int(10.0 ** (random.next_double() * 6.0) * 100.0 + 0.5)


def _base_url(random: JavaRandom) -> str:
    parts = [_next_string(random, 5, "_") for _ in range(3)]
    return "https://www.nexmark.com/" + "/".join(parts) + "/item.htm?query=1"


def _reversed_int32(value: int) -> int:
    bits = int(f"{value & 0xFFFFFFFF:032b}"[::-1], 2)
    return bits - (1 << 32) if bits >= 1 << 31 else bits


def _channel_url(channel: int) -> tuple[str, str]:
    random = JavaRandom(channel)
    url = _base_url(random)
    if random.next_int(10) > 0:
        url += "&channel_id=" + str(abs(_reversed_int32(channel)))
    return "channel-" + str(channel), url


HOT_URLS = tuple(_base_url(JavaRandom(CHANNELS_NUMBER + i)) for i in range(len(HOT_CHANNELS)))
_CHANNEL_CACHE: dict[int, tuple[str, str]] = {}


def _person(event_id: int, random: JavaRandom, timestamp: int, config: GeneratorConfig) -> Person:
    name = FIRST_NAMES[random.next_int(len(FIRST_NAMES))] + " " + LAST_NAMES[random.next_int(len(LAST_NAMES))]
    email = _next_string(random, 7) + "@" + _next_string(random, 5) + ".com"
    card = " ".join(f"{random.next_int(10000):04d}" for _ in range(4))
    city = US_CITIES[random.next_int(len(US_CITIES))]
    state = US_STATES[random.next_int(len(US_STATES))]
    size = 8 + len(name) + len(email) + len(card) + len(city) + len(state)
    return Person(last_base0_person_id(event_id) + FIRST_PERSON_ID, name, email, card, city, state,
                  timestamp, _next_extra(random, event_id, size, config.avg_person_byte_size))


def _auction_length(count: int, random: JavaRandom, timestamp: int, config: GeneratorConfig) -> int:
    events_for_auctions = config.num_in_flight_auctions * TOTAL_PROPORTION // AUCTION_PROPORTION
    horizon_ms = config.timestamp(config.adjusted(count) + events_for_auctions) - timestamp
    return 1 + _next_long(random, max(horizon_ms * 2, 1))


def _auction(count: int, event_id: int, random: JavaRandom, timestamp: int, config: GeneratorConfig) -> Auction:
    if random.next_int(config.hot_sellers_ratio) > 0:
        seller = last_base0_person_id(event_id) // HOT_SELLER_RATIO * HOT_SELLER_RATIO
    else:
        seller = _next_base0_person_id(event_id, random, config)
    category = FIRST_CATEGORY_ID + random.next_int(NUM_CATEGORIES)
    initial_bid = _next_price(random)
    expires = timestamp + _auction_length(count, random, timestamp, config)
    name = _next_string(random, 20)
    description = _next_string(random, 100)
    reserve = initial_bid + _next_price(random)
    size = 8 + len(name) + len(description) + 8 * 5
    return Auction(last_base0_auction_id(event_id) + FIRST_AUCTION_ID, name, description, initial_bid,
                   reserve, timestamp, expires, seller + FIRST_PERSON_ID, category,
                   _next_extra(random, event_id, size, config.avg_auction_byte_size))


def _bid(event_id: int, random: JavaRandom, timestamp: int, config: GeneratorConfig) -> Bid:
    if random.next_int(config.hot_auction_ratio) > 0:
        auction = last_base0_auction_id(event_id) // HOT_AUCTION_RATIO * HOT_AUCTION_RATIO
    else:
        auction = _next_base0_auction_id(event_id, random, config)
    if random.next_int(config.hot_bidders_ratio) > 0:
        bidder = last_base0_person_id(event_id) // HOT_BIDDER_RATIO * HOT_BIDDER_RATIO + 1
    else:
        bidder = _next_base0_person_id(event_id, random, config)
    price = _next_price(random)
    if random.next_int(HOT_CHANNELS_RATIO) > 0:
        i = random.next_int(len(HOT_CHANNELS))
        channel, url = HOT_CHANNELS[i], HOT_URLS[i]
    else:
        number = random.next_int(CHANNELS_NUMBER)
        found = _CHANNEL_CACHE.get(number)
        if found is None:
            found = _CHANNEL_CACHE[number] = _channel_url(number)
        channel, url = found
    return Bid(auction + FIRST_AUCTION_ID, bidder + FIRST_PERSON_ID, price, channel, url, timestamp,
               _next_extra(random, event_id, 32, config.avg_bid_byte_size))


def event(count: int, config: GeneratorConfig) -> tuple[int, Person | Auction | Bid]:
    """The ``count``-th event emitted, as ``(timestamp_ms, event)``."""
    event_id = config.adjusted(count)
    timestamp = config.timestamp(event_id)
    random = JavaRandom(event_id + (config.seed << 40))
    kind = event_id % TOTAL_PROPORTION
    if kind < PERSON_PROPORTION:
        return timestamp, _person(event_id, random, timestamp, config)
    if kind < PERSON_PROPORTION + AUCTION_PROPORTION:
        return timestamp, _auction(count, event_id, random, timestamp, config)
    return timestamp, _bid(event_id, random, timestamp, config)


def events(config: GeneratorConfig, start: int = 0, stop: int | None = None, step: int = 1) -> Iterator[tuple[int, object]]:
    """The events ``start, start + step, ...`` before ``stop`` (default: ``config.events``)."""
    for count in range(start, config.events if stop is None else stop, step):
        yield event(count, config)
