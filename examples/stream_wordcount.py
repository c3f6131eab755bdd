"""Windowed word count over a directory whose files grow (a file watcher).

    jet run examples/stream_wordcount.py --timeout 10s
    # meanwhile, in another terminal:
    echo "it was the best of times" >> out/incoming/lines.txt

Lines appended to the files of DIRECTORY (default out/incoming, made if missing) after the job
started, and lines of files created there, are counted per word in tumbling windows of
WINDOW_MS (1 s) of ingestion time; each window's counts, KeyedWindowResult(start, end, word,
count, is_early), go to the log and to the job's result list.

file_watcher -> add-timestamps (wall clock) -> flat_map(words) -> tumbling window count per word
"""

import os
import re

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

WORD = re.compile(r"[a-z']+")


def pipeline(directory="out/incoming", window_ms="1000"):
    os.makedirs(directory, exist_ok=True)
    p = Pipeline.create()
    counts = (p.read_from(Sources.file_watcher(directory))
              .with_ingestion_timestamps()
              .flat_map(lambda line: WORD.findall(line.lower()))
              .grouping_key(lambda word: word)
              .window(WindowDefinition.tumbling(int(window_ms)))
              .aggregate(AggregateOperations.counting()))
    counts.write_to(Sinks.logger(lambda w: f"[{w.start}, {w.end}) {w.key}: {w.result}"))
    counts.write_to(Sinks.list("counts"))
    return p
