"""Word count: the ten most frequent words of text files.

    jet run examples/wordcount.py examples/data/two-cities.txt

files -> fused(flat-map, filter) -> group-and-aggregate (two-stage) -> top-10 -> log
"""

import re

from jet import AggregateOperations, Pipeline, Sinks, Sources

WORD = re.compile(r"[a-z']+")


def pipeline(pattern="examples/data/two-cities.txt", top="10"):
    p = Pipeline.create()
    counts = (p.read_from(Sources.files(pattern))
              .flat_map(lambda line: WORD.findall(line.lower()))
              .filter(lambda word: len(word) > 0)
              .grouping_key(lambda word: word)
              .aggregate(AggregateOperations.counting()))
    ranking = counts.aggregate(AggregateOperations.top_n(int(top), key_fn=lambda entry: entry[1]))
    ranking.set_name(f"top-{top}")
    ranking.write_to(Sinks.logger(lambda entries: "\n".join(f"{w:>12} {n}" for w, n in entries)))
    ranking.write_to(Sinks.list())
    return p
