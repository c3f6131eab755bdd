"""Rolling aggregates, distinct and sort over the trades: the symbols traded, in order, and each
trade's running volume of its symbol, the largest first.

    jet run examples/trade_rankings.py

trades (JSON lines) -+-> symbol -> distinct -> sort                          -> 'symbols'
                     +-> by symbol: rolling sum of quantity -> sort (desc)   -> 'running-volume'
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources


def pipeline(trades="examples/data/trades.jsonl"):
    p = Pipeline.create()
    trades = p.read_from(Sources.jsonl(trades))
    trades.map(lambda t: t["symbol"]).distinct().sort().write_to(Sinks.list("symbols"))
    (trades.grouping_key(lambda t: t["symbol"])
     .rolling_aggregate(AggregateOperations.summing(lambda t: t["quantity"]))  # (symbol, volume so far)
     .sort(key_fn=lambda entry: entry[1], reverse=True)
     .write_to(Sinks.list("running-volume")))
    return p
