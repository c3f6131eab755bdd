"""Grouped average: the mean temperature of each station, written as JSON lines.

    jet run examples/grouped_average.py examples/data/temperatures.csv /tmp/averages

CSV rows -> group by station -> averaging -> JSON lines files (one per sink processor)
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources


# /tmp by default: on Kubernetes only volumes are writable (the operator mounts one at /tmp).
def pipeline(pattern="examples/data/temperatures.csv", out="/tmp/averages"):
    p = Pipeline.create()
    averages = (p.read_from(Sources.csv(pattern))
                .grouping_key(lambda row: row["station"])
                .aggregate(AggregateOperations.averaging(lambda row: float(row["celsius"])))
                .map(lambda entry: (entry[0], round(entry[1], 2))))
    averages.write_to(Sinks.jsonl(out))
    averages.write_to(Sinks.list())
    return p
