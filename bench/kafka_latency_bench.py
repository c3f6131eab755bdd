"""Kafka -> 1 s tumbling-window count per key -> Kafka at a fixed input rate: how long after a
window ends its counts can be read.

    python bench/kafka_latency_bench.py [--rate 2000] [--seconds 40] [--warmup-s 10]
        [--partitions 2] [--members 2] [--guarantees none,exactly-once]
        [--snapshot-interval-ms 1000] [--systems jet,bytewax] [--bytewax-waits-ms 100,2000]
        [--servers host:port]

A producer thread writes ``--rate`` records a second for ``--seconds`` (value = key
``k0``..``k99`` round robin, record timestamp = the wall clock when it is produced, spread over
``--partitions``). The pipeline is ``kafka_bench.py``'s (1 s tumbling windows, 100 ms allowed
lag, one output record per (window, key)). A reader thread reads the output topic's raw log
every ``POLL_S`` (transaction markers applied: an exactly-once record counts from its commit,
which comes with the next snapshot) and notes the wall time each window's record first shows.
Latency of an output record = that time - the window's end (both wall clock, one machine).
Windows starting before ``--warmup-s`` (start-up) or ending less than a second before the input
stops (no later records move the watermark past them) are left out;
p50, p99 and max over the records of the remaining windows, and whether each of them showed
exactly once with the oracle's count (the producer's own tally per window and key).

Jet runs on a local cluster of ``--members`` processes; Bytewax 0.21 (if installed) runs
``bytewax_kafka.py`` on its own Kafka connector (``KafkaSource`` tailing, a non-transactional
``KafkaSink``) as as many processes, stopped when the run ends, once per ``--bytewax-waits-ms``:
its ``EventClock`` closes a window that long in *system* time after it saw an event past the
window's end, so a short wait closes windows before their last records arrived (the run shows
them as wrong counts and windows written more than once).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "member"), str(HERE.parent), str(HERE)]

from kafka_bench import KEYS, jet_pipeline, kafka_servers  # noqa: E402
from tests.connectors.kafka.broker import free_port  # noqa: E402
from tests.connectors.kafka.kafka_support import committed_values, create_topic  # noqa: E402

POLL_S = 0.05
"""How often the reader looks at the output topic (the latencies' resolution)."""
TICK_S = 0.01
"""The producer writes a tick's share of the rate every tick."""


class RatedProducer(threading.Thread):
    """Writes ``rate`` records a second for ``seconds``; ``tally[(window start, key)]`` counts them."""

    def __init__(self, servers: str, topic: str, partitions: int, rate: int, seconds: float) -> None:
        super().__init__(name="rated-producer", daemon=True)
        self.servers, self.topic, self.partitions = servers, topic, partitions
        self.rate, self.seconds = rate, seconds
        self.tally: Counter = Counter()
        self.started_ms = self.ended_ms = 0

    def run(self) -> None:
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": self.servers, "linger.ms": 5})
        self.started_ms = int(time.time() * 1000)
        begun, sent = time.monotonic(), 0
        while (elapsed := time.monotonic() - begun) < self.seconds:
            due = int(elapsed * self.rate)
            now_ms = int(time.time() * 1000)
            for i in range(sent, due):
                key = f"k{i % KEYS}"
                producer.produce(self.topic, key.encode(), partition=i % self.partitions, timestamp=now_ms)
                self.tally[(now_ms - now_ms % 1000, key)] += 1
            sent = due
            producer.poll(0)
            time.sleep(TICK_S)
        self.ended_ms = int(time.time() * 1000)
        producer.flush(30)


class OutputWatch(threading.Thread):
    """Notes the wall time (ms) each output record (window start, key) is first seen committed."""

    def __init__(self, servers: str, topic: str) -> None:
        super().__init__(name="output-watch", daemon=True)
        self.servers, self.topic = servers, topic
        self.seen: dict[tuple[int, str], tuple[int, int]] = {}  # -> (first seen ms, count)
        self.repeated = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            values = committed_values(self.servers, self.topic)
            now_ms = int(time.time() * 1000)
            occurrences = Counter()
            for value in values:
                start, key, count = json.loads(value)
                occurrences[(start, key)] += 1
                self.seen.setdefault((start, key), (now_ms, count))
            self.repeated = sum(n - 1 for n in occurrences.values())
            self.stop.wait(POLL_S)


def percentile(sorted_values: list[int], fraction: float) -> int:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def measure(name: str, servers: str, args, start_job) -> None:
    """Run one system over a fresh input and output topic and print its latencies."""
    stamp = f"{os.getpid()}-{time.monotonic_ns()}"
    source_topic, sink_topic = f"lat-in-{stamp}", f"lat-out-{stamp}"
    create_topic(servers, source_topic, args.partitions)
    create_topic(servers, sink_topic, 1)
    watch = OutputWatch(servers, sink_topic)
    watch.start()
    stop_job = start_job(source_topic, sink_topic)
    try:
        time.sleep(3)  # the job is up and reading (the first windows are warm-up anyway)
        producer = RatedProducer(servers, source_topic, args.partitions, args.rate, args.seconds)
        producer.start()
        producer.join()
        time.sleep(max(5.0, 2.5 * args.snapshot_interval_ms / 1000))  # the last windows close and commit
    finally:
        stop_job()
        watch.stop.set()
        watch.join()
    first = producer.started_ms - producer.started_ms % 1000 + 1000 + int(args.warmup_s * 1000)
    last_end = producer.ended_ms - 1000  # a second of later input moves the watermark past the window
    measured = {wk: n for wk, n in producer.tally.items() if wk[0] >= first and wk[0] + 1000 <= last_end}
    latencies = sorted(watch.seen[wk][0] - (wk[0] + 1000) for wk in measured if wk in watch.seen)
    missing = sum(1 for wk in measured if wk not in watch.seen)
    wrong = sum(1 for wk, n in measured.items() if wk in watch.seen and watch.seen[wk][1] != n)
    if not latencies:
        print(f"{name:34} no measured window was seen (missing {missing})")
        return
    print(f"{name:34} p50 {percentile(latencies, 0.50):6,} ms  p99 {percentile(latencies, 0.99):6,} ms"
          f"  max {latencies[-1]:6,} ms over {len(latencies):,} window records;"
          f" missing {missing}, wrong count {wrong}, repeated {watch.repeated}")


def jet_job(servers: str, args, guarantee: str):
    import jet

    def start(source_topic: str, sink_topic: str):
        config = {"processing_guarantee": guarantee, "snapshot_interval_ms": args.snapshot_interval_ms}
        cluster = jet.local_cluster(members=args.members, log_dir=tempfile.mkdtemp(prefix="kafka-latency-"))
        cluster.__enter__()
        job = cluster.new_job(jet_pipeline(servers, source_topic, sink_topic), config)

        def stop() -> None:
            try:
                job.cancel()
            finally:
                cluster.__exit__(None, None, None)
        return stop
    return start


def bytewax_job(servers: str, args, wait_ms: int):
    def start(source_topic: str, sink_topic: str):
        addresses = ";".join(f"127.0.0.1:{free_port()}" for _ in range(args.members))
        env = {**os.environ, "KAFKA_BENCH_SERVERS": servers, "KAFKA_BENCH_IN": source_topic,
               "KAFKA_BENCH_OUT": sink_topic, "KAFKA_BENCH_TAIL": "1", "KAFKA_BENCH_WAIT_MS": str(wait_ms),
               "PYTHONPATH": str(HERE)}
        workers = [subprocess.Popen([sys.executable, "-m", "bytewax.run", "bytewax_kafka:flow", "-i", str(i),
                                     "-a", addresses], env=env, cwd=HERE) for i in range(args.members)]

        def stop() -> None:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                try:
                    worker.wait(20)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait(10)
        return stop
    return start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--warmup-s", type=float, default=10)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--guarantees", default="none,exactly-once")
    parser.add_argument("--snapshot-interval-ms", type=int, default=1000)
    parser.add_argument("--systems", default="jet,bytewax")
    parser.add_argument("--bytewax-waits-ms", default="100,2000")
    parser.add_argument("--servers")
    args = parser.parse_args()
    with kafka_servers(args.servers) as (servers, _):
        run(servers, args)


def run(servers: str, args) -> None:
    print(f"{args.rate:,} records/s for {args.seconds:g} s over {args.partitions} partitions, {KEYS} keys,"
          f" 1 s windows; load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    if "jet" in args.systems:
        for guarantee in args.guarantees.split(","):
            extra = f", snapshots every {args.snapshot_interval_ms} ms" if guarantee != "none" else ""
            measure(f"jet {args.members} members, {guarantee}{extra}", servers, args,
                    jet_job(servers, args, guarantee))
    if "bytewax" in args.systems:
        if importlib.util.find_spec("bytewax") is None:
            print("bytewax is not installed: skipped (pip install -r bench/requirements-stream.txt)")
        else:
            for wait_ms in map(int, args.bytewax_waits_ms.split(",")):
                measure(f"bytewax {args.members} processes, wait {wait_ms} ms", servers, args,
                        bytewax_job(servers, args, wait_ms))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
