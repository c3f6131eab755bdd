"""A trades stream enriched by a hash join with a batch file, then the value per sector a second.

    jet run examples/stream_enrichment.py --timeout 10s

Each trade of the stream (RATE a second, default 1,000) is joined with its company's row of
COMPANIES (examples/data/companies.csv, read once, the lookup side of the hash join); a symbol
the file does not know gets sector "unknown" (a left outer join). The traded value per sector
is summed in tumbling 1 s windows: KeyedWindowResult(start, end, sector, value, is_early).

item_stream --hash join on symbol--> companies.csv -> tumbling window 1 s, sum of value per sector
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

SYMBOLS = ("ACME", "GLBX", "INIT", "UMBR", "HOOL")  # HOOL is not in companies.csv


def trade(timestamp, sequence):
    """The trade due at ``timestamp`` (epoch ms): everything but its id follows from the time."""
    return {"id": sequence, "time": timestamp, "symbol": SYMBOLS[timestamp // 7 % len(SYMBOLS)],
            "price": round(100 + timestamp * 7919 % 2000 / 100, 2), "quantity": 1 + timestamp % 50}


def enrich(trade, company):
    return {**trade, "sector": company["sector"] if company else "unknown",
            "value": round(trade["quantity"] * trade["price"], 2)}


def pipeline(companies="examples/data/companies.csv", rate="1000"):
    p = Pipeline.create()
    lookup = p.read_from(Sources.csv(companies))
    enriched = (p.read_from(Sources.item_stream(int(rate), trade))
                .with_native_timestamps(50)
                .hash_join(lookup, key_fn=lambda t: t["symbol"], other_key_fn=lambda c: c["symbol"],
                           mapper=enrich))
    values = (enriched.grouping_key(lambda t: t["sector"])
              .window(WindowDefinition.tumbling(1000))
              .aggregate(AggregateOperations.summing(lambda t: t["value"])))
    values.write_to(Sinks.logger(lambda w: f"[{w.start}, {w.end}) {w.key}: {w.result:,.2f}"))
    values.write_to(Sinks.list("sectors"))
    return p
