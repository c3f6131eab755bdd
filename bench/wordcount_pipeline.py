"""The word count `jet run` runs in the benchmark (same tokenisation as every contender)."""

from jet import AggregateOperations, Pipeline, Sinks, Sources


def pipeline(pattern):
    p = Pipeline.create()
    (p.read_from(Sources.files(pattern))
     .flat_map(lambda line: line.lower().split())
     .grouping_key(lambda word: word)
     .aggregate(AggregateOperations.counting())
     .aggregate(AggregateOperations.summing(lambda entry: entry[1]))
     .write_to(Sinks.list()))
    return p
