"""The same word count as a Bytewax dataflow (run by wordcount_bench.py with 2 processes)."""

import os
from pathlib import Path

import bytewax.operators as op
from bytewax.connectors.files import DirSource
from bytewax.connectors.stdio import StdOutSink
from bytewax.dataflow import Dataflow

flow = Dataflow("wordcount")
lines = op.input("lines", flow, DirSource(Path(os.environ["CORPUS_DIR"]), glob_pat="*.txt"))
words = op.flat_map("tokenize", lines, lambda line: line.lower().split())
counts = op.count_final("count", words, lambda word: word)
total = op.map("value", counts, lambda entry: entry[1])
keyed = op.key_on("all", total, lambda _: "total")
summed = op.reduce_final("sum", keyed, lambda a, b: a + b)
op.output("out", summed, StdOutSink())
