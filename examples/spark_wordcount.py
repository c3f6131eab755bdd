"""Word count with Spark as the data access layer: Parquet (or text) in, Parquet out.

    jet run examples/spark_wordcount.py [IN [OUT]]

or, as the operator runs it, with the two Spark drivers next to running members:

    jet spark-source --pipeline examples/spark_wordcount.py --members ... -- IN OUT
    jet spark-sink   --pipeline examples/spark_wordcount.py --members ... -- IN OUT

Spark reads IN (a Parquet dataset with a string column ``line``, or text files when IN ends
with .txt) and writes its rows into the job; Jet splits the lines and counts the words; Spark
writes the (word, count) rows as Parquet to OUT. The local runner starts both Spark drivers.
IN defaults to examples/data/lines.parquet (the lines of two-cities.txt), OUT to
out/wordcount.parquet (replaced on every run).
"""

import re

from jet import AggregateOperations, Pipeline, Sinks, Sources

SCHEMA = "word string, count long"
_WORD = re.compile(r"\w+")


def words(row):
    return _WORD.findall(row[0].lower())


def pipeline(source="examples/data/lines.parquet", out="out/wordcount.parquet"):
    fmt = "text" if source.endswith(".txt") else "parquet"
    p = Pipeline.create()
    (p.read_from(Sources.spark(fmt, source))
     .flat_map(words)
     .grouping_key(lambda word: word)
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.spark("parquet", out, mode="overwrite", schema=SCHEMA)))
    return p
