"""Windowed word count from one Kafka topic to another, exactly-once.

    export KAFKA_SERVERS=broker:9092             # or the first argument; default localhost:9092
    jet run examples/kafka_wordcount.py --processing-guarantee exactly-once --timeout 30s
    jet run examples/kafka_wordcount.py broker:9092 lines counts 1000

Lines of text in topic INPUT (default ``lines``) are split into words and counted per word in
tumbling windows of WINDOW_MS (1 s) of the records' own timestamps; each window's count goes to
topic OUTPUT (default ``counts``) as JSON ``{"start": ..., "end": ..., "word": ..., "count": ...}``
keyed by the word. Both topics must exist. Under ``--processing-guarantee exactly-once`` the
counts are written in Kafka transactions committed with each snapshot: read them with
``isolation.level=read_committed`` (librdkafka's and Java's consumers default differently).

kafka(INPUT) -> words -> tumbling window count per word (native timestamps, 100 ms lag) -> kafka(OUTPUT)
"""

import json
import os
import re

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

WORD = re.compile(r"[a-z']+")


def pipeline(servers=None, input_topic="lines", output_topic="counts", window_ms="1000"):
    servers = servers or os.environ.get("KAFKA_SERVERS", "localhost:9092")
    p = Pipeline.create()
    (p.read_from(Sources.kafka(input_topic, servers, value_fn=lambda value: value.decode("utf-8", "replace")))
     .with_native_timestamps(100)
     .flat_map(lambda line: WORD.findall(line.lower()))
     .grouping_key(lambda word: word)
     .window(WindowDefinition.tumbling(int(window_ms)))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.kafka(output_topic, servers, key_fn=lambda w: w.key,
                           value_fn=lambda w: json.dumps({"start": w.start, "end": w.end, "word": w.key,
                                                          "count": w.result}))))
    return p
