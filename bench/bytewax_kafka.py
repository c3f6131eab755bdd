"""kafka_bench.py's definition as a Bytewax 0.21 dataflow on Bytewax's own Kafka connector.

The input topic (``KAFKA_BENCH_IN``) read to its end (``tail=False``; tailing when
``KAFKA_BENCH_TAIL`` is set, for kafka_latency_bench.py), key = the record value,
a 1 s ``TumblingWindower`` aligned to the epoch with an ``EventClock`` on the record timestamp
waiting 100 ms (``KAFKA_BENCH_WAIT_MS`` if set), ``count_window``, one record ``[window start ms, key, count]`` per window (as Jet's) to
``KAFKA_BENCH_OUT``. Run by kafka_bench.py as

    python -m bytewax.run bytewax_kafka:flow -i <i> -a "<addr0>;<addr1>"
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import bytewax.operators as op
from bytewax.connectors.kafka import KafkaSink, KafkaSinkMessage, KafkaSource
from bytewax.dataflow import Dataflow
from bytewax.operators.windowing import EventClock, TumblingWindower, count_window

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
SERVERS = os.environ["KAFKA_BENCH_SERVERS"].split(",")


def _event(message):
    return message.value.decode(), EPOCH + timedelta(milliseconds=message.timestamp[1])


flow = Dataflow("kafka_bench")
records = op.input("in", flow, KafkaSource(SERVERS, [os.environ["KAFKA_BENCH_IN"]],
                                                tail=bool(os.environ.get("KAFKA_BENCH_TAIL"))))
events = op.filter("no-closing", op.map("event", records, _event), lambda event: event[0] != "closing")
windowed = count_window(
    "count", events,
    EventClock(lambda event: event[1],
               wait_for_system_duration=timedelta(milliseconds=int(os.environ.get("KAFKA_BENCH_WAIT_MS", "100")))),
    TumblingWindower(length=timedelta(seconds=1), align_to=EPOCH),
    lambda event: event[0])
# (key, (window id, count)); the id of a 1 s window aligned to the epoch is its start in seconds
counts = op.map("format", windowed.down, lambda key_window: KafkaSinkMessage(
    None, json.dumps([key_window[1][0] * 1000, key_window[0], key_window[1][1]]).encode()))
op.output("out", counts, KafkaSink(SERVERS, os.environ["KAFKA_BENCH_OUT"]))
