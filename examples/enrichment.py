"""Hash-join enrichment: trades enriched with their company's name and sector.

    jet run examples/enrichment.py

trades (JSON lines) -hash join on symbol-> companies (CSV, the lookup side) -> value per sector
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources


def enrich(trade, company):
    name, sector = (company["name"], company["sector"]) if company else ("unknown", "unknown")
    return {**trade, "company": name, "sector": sector,
            "value": round(trade["quantity"] * trade["price"], 2)}


def pipeline(trades="examples/data/trades.jsonl", companies="examples/data/companies.csv"):
    p = Pipeline.create()
    lookup = p.read_from(Sources.csv(companies))
    enriched = p.read_from(Sources.jsonl(trades)).hash_join(
        lookup, key_fn=lambda t: t["symbol"], other_key_fn=lambda c: c["symbol"], mapper=enrich)
    (enriched.grouping_key(lambda t: t["sector"])
     .aggregate(AggregateOperations.summing(lambda t: t["value"]))
     .map(lambda entry: (entry[0], round(entry[1], 2)))
     .write_to(Sinks.list()))
    return p
