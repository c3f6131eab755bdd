"""A trades stream: the average price per symbol over sliding windows, with early results.

    jet run examples/stream_trades.py --timeout 10s

Sources.item_stream generates RATE trades a second (default 1,000: one a millisecond), each
stamped with the time it was due. Every 500 ms, each symbol's average price over the last 2 s is
emitted (KeyedWindowResult(start, end, symbol, average, is_early=False)); every 250 ms the
windows still open are emitted too, marked is_early=True, so a dashboard sees the current
figures before a window closes. The averages go to an observable (the live table of `jet run`
shows the latest ones; `job.observable("averages")` follows them from a client) and to the job's
result list.

item_stream (native timestamps, 50 ms lag) -> sliding window 2 s / 500 ms, average per symbol
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

SYMBOLS = ("ACME", "GLBX", "INIT", "UMBR", "HOOL")


def trade(timestamp, sequence):
    """The trade due at ``timestamp`` (epoch ms): everything but its id follows from the time."""
    return {"id": sequence, "time": timestamp, "symbol": SYMBOLS[timestamp // 7 % len(SYMBOLS)],
            "price": round(100 + timestamp * 7919 % 2000 / 100, 2), "quantity": 1 + timestamp % 50}


def pipeline(rate="1000"):
    p = Pipeline.create()
    averages = (p.read_from(Sources.item_stream(int(rate), trade))
                .with_native_timestamps(50)
                .grouping_key(lambda t: t["symbol"])
                .window(WindowDefinition.sliding(2000, 500).set_early_results_period(250))
                .aggregate(AggregateOperations.averaging(lambda t: t["price"])))
    averages.write_to(Sinks.observable("averages"))
    averages.write_to(Sinks.list("averages"))
    return p
