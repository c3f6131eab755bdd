"""Joining two streams: orders and their payments, in windows and by interval.

    jet run examples/stream_join.py --timeout 10s

Two timestamped sources replay ten simulated minutes of ORDERS and of the PAYMENTS that follow
most of them 1-20 s later, slightly out of order (within the allowed lag), then close: the
streams end, so the last windows are flushed and the job completes with exact results.

- ``paid_within_15s``: an interval join, each order with the payment of its id made from the
  order's time to 15 s after it (``right.ts`` in ``[left.ts - 0, left.ts + 15000]``); the
  buffers are evicted by the watermark.
- ``orders_by_minute``: a window left join, each order with the payment of its id in the same
  1-minute tumbling window, or None (unpaid, or paid in the next minute).
- ``per_customer``: co-grouping, per customer and minute, the number of orders and the sum paid
  (``aggregate2``): a KeyedWindowResult whose result is ``(orders, paid)``.

orders, payments -> interval join 15 s | window join 1 min (left) | aggregate2 per customer
"""

import random

from jet import AggregateOperations as A, Pipeline, Sinks, SourceBuilder, WindowDefinition

EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
ALLOWED_LAG_MS = 2_000
MINUTE_MS = 60_000


def events(seed=3, orders=300):
    """(orders, payments): orders (id, customer, amount) and payments (id, customer, amount),
    each as (timestamp, event) in arrival order (up to 1 s late)."""
    rng = random.Random(seed)
    placed, paid = [], []
    for order in range(orders):
        t = EPOCH_MS + rng.randrange(10 * MINUTE_MS)
        event = (f"order-{order}", f"customer-{rng.randrange(8)}", rng.randrange(5, 500))
        placed.append((t, event))
        if rng.random() < 0.9:
            paid.append((t + rng.randrange(1_000, 20_000), event))

    def arrival(stamped):
        return sorted(stamped, key=lambda e: e[0] + rng.randrange(1_000))

    return arrival(placed), arrival(paid)


def _source(name, side):
    def fill(state, buffer):
        for timestamp, event in state["events"][state["next"]:state["next"] + 100]:
            buffer.add(event, timestamp)
        state["next"] += 100
        if state["next"] >= len(state["events"]):
            buffer.close()

    return (SourceBuilder.timestamped_stream(name, lambda ctx: {"events": events()[side], "next": 0})
            .fill_buffer_fn(fill).build())


def order_id(event):
    return event[0]


def customer(event):
    return event[1]


def pipeline():
    p = Pipeline.create()
    orders = p.read_from(_source("orders", 0)).with_native_timestamps(ALLOWED_LAG_MS)
    payments = p.read_from(_source("payments", 1)).with_native_timestamps(ALLOWED_LAG_MS)

    orders.grouping_key(order_id) \
        .interval_join(payments.grouping_key(order_id), 0, 15_000, lambda order, payment: (order[0], payment[2])) \
        .write_to(Sinks.list("paid_within_15s"))

    orders.grouping_key(order_id).window(WindowDefinition.tumbling(MINUTE_MS)) \
        .join(payments.grouping_key(order_id), lambda order, payment: (order[0], payment and payment[2]), how="left") \
        .write_to(Sinks.list("orders_by_minute"))

    orders.grouping_key(customer).window(WindowDefinition.tumbling(MINUTE_MS)) \
        .aggregate2(A.counting(), payments.grouping_key(customer), A.summing(lambda payment: payment[2])) \
        .write_to(Sinks.list("per_customer"))
    return p
