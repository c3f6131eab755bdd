"""Fault tolerance figures (issue 12): a snapshot of 1 M keys of aggregation state, and the time
from killing a member to the first result after the restore.

    python bench/fault_tolerance_bench.py state [--keys 1000000] [--members 2] [--restart]
    python bench/fault_tolerance_bench.py recovery [--members 3] [--runs 3]

Throughput and latency with exactly-once snapshots every second against none come from the
stream latency benchmark run twice (see bench/README.md):

    python bench/stream_latency_bench.py --systems jet --guarantee exactly-once --snapshot-interval-ms 1000

``state``: a stream whose tumbling window (an hour long) holds a count for each of ``--keys``
keys, on ``--members`` members with exactly-once snapshots every second; once every key is in
the state, the job's snapshots are read from ``job.info()["lastSnapshot"]`` (duration from the
start of phase 1 to the commit, bytes in the store, keys). With ``--restart`` the job is then
restarted (a terminal snapshot, then a new execution restoring it) and each member's restore
line is read from its log: chunks and entries it read, and the time it took to read and route
them at ``init``.

``recovery``: Sources.item_stream at 10 000 events/s counted in 100 ms tumbling windows into a
sink that records when each result arrives, exactly-once with a snapshot every second. After
5 s member 1 is killed (SIGKILL; the local cluster restarts it). Recovery = the first result
received after the job's restart count rose, minus the moment of the kill.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(Path(__file__).resolve().parent)]

import jet  # noqa: E402
from jet import AggregateOperations, Pipeline, SinkBuilder, Sources, SourceBuilder, WindowDefinition  # noqa: E402

from stream_records import RESULT, RecordWriter, now_ms  # noqa: E402

HOUR_MS = 3_600_000
SETTINGS = dict(heartbeat_interval_ms=500, heartbeat_timeout_ms=3000, restart_delay_ms=100)


# -- state ---------------------------------------------------------------------------------------
class DistinctKeys:
    """Emits every key once (10 000 per fill) at event time 0, then nothing."""

    def __init__(self, keys: int) -> None:
        self.keys, self.next = keys, 0

    def fill(self, buffer) -> None:
        end = min(self.keys, self.next + 10_000)
        for key in range(self.next, end):
            buffer.add(key, 0)
        self.next = end
        if end == self.keys:
            time.sleep(0.01)

    def restore(self, snapshots: list) -> None:
        self.next = min(snapshots)


def state_pipeline(keys: int) -> Pipeline:
    source = (SourceBuilder.timestamped_stream("distinct-keys", lambda context: DistinctKeys(keys))
              .fill_buffer_fn(DistinctKeys.fill)
              .create_snapshot_fn(lambda state: state.next)
              .restore_snapshot_fn(DistinctKeys.restore)
              .build())
    p = Pipeline.create()
    (p.read_from(source).with_native_timestamps(0)
     .grouping_key(lambda key: key)
     .window(WindowDefinition.tumbling(HOUR_MS))
     .aggregate(AggregateOperations.counting())
     .write_to(jet.Sinks.logger()))
    return p


def measure_state(keys: int, members: int, snapshots: int, restart: bool = False) -> None:
    with tempfile.TemporaryDirectory(prefix="jet-ft-bench-") as logs, \
            jet.local_cluster(members, log_dir=logs) as cluster:
        job = cluster.new_job(state_pipeline(keys), {"processing_guarantee": "exactly-once",
                                                     "snapshot_interval_ms": 1000})
        seen: dict[int, dict] = {}
        deadline = time.monotonic() + 600
        while len([s for s in seen.values() if s["keys"] >= keys]) < snapshots:
            if time.monotonic() > deadline:
                raise SystemExit(f"no {snapshots} full snapshots within 600 s: {job.info()}")
            last = job.info().get("lastSnapshot")
            if last is not None:
                seen[last["id"]] = last
            time.sleep(0.2)
        if restart:
            started = time.monotonic()
            job.restart()
            while not (job.info()["restarts"] >= 1 and job.info()["status"] == "RUNNING"):
                time.sleep(0.05)
            print(f"restart: {time.monotonic() - started:.2f} s from the request to RUNNING (terminal snapshot "
                  f"included)")
            for member in range(members):
                for line in (Path(logs) / f"member-{member}.log").read_text().splitlines():
                    if "restores snapshot" in line:
                        print(f"  member {member}: {line.split('restores ', 1)[1]}")
        job.cancel()
    full = [s for s in seen.values() if s["keys"] >= keys]
    print(f"{keys} keys on {members} members, {len(full)} snapshots:")
    for s in full:
        print(f"  snapshot {s['id']}: {s['durationMs']} ms, {s['bytes'] / 1e6:.1f} MB, {s['keys']} keys")
    print(f"median {statistics.median(s['durationMs'] for s in full):.0f} ms, "
          f"{statistics.median(s['bytes'] for s in full) / 1e6:.1f} MB")


# -- recovery ------------------------------------------------------------------------------------
def _record(records: RecordWriter, result) -> None:
    records.results(((result.end, result.key, result.result),))


def recovery_pipeline(out_dir: str) -> Pipeline:
    sink = (SinkBuilder.sink("recording-sink", lambda context: RecordWriter(out_dir, "sink"))
            .receive_fn(_record).destroy_fn(RecordWriter.close).build())
    p = Pipeline.create()
    (p.read_from(Sources.item_stream(10_000, lambda ts, seq: seq % 10))
     .with_native_timestamps(50)
     .grouping_key(lambda key: key)
     .window(WindowDefinition.tumbling(100))
     .aggregate(AggregateOperations.counting())
     .write_to(sink))
    return p


def received_times(out_dir: str) -> list[float]:
    times = []
    for path in Path(out_dir).glob("sink-*.txt"):
        for line in path.read_text().splitlines():
            if line.startswith(RESULT + " "):
                times.append(float(line.split()[1]))
    return sorted(times)


def measure_recovery(members: int) -> float:
    with tempfile.TemporaryDirectory(prefix="jet-ft-recovery-") as out_dir, \
            tempfile.TemporaryDirectory(prefix="jet-ft-logs-") as logs, \
            jet.local_cluster(members, log_dir=logs, **SETTINGS) as cluster:
        job = cluster.new_job(recovery_pipeline(out_dir), {"processing_guarantee": "exactly-once",
                                                           "snapshot_interval_ms": 1000})
        while job.info()["status"] != "RUNNING":
            time.sleep(0.05)
        time.sleep(5)
        killed_ms = now_ms()
        cluster.kill_member(1, signal.SIGKILL)
        restarted_ms = None
        deadline = time.monotonic() + 120
        while restarted_ms is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"the job did not restart within 120 s: {job.info()}")
            try:
                info = job.info()
            except Exception:  # noqa: BLE001 - not reachable for a moment
                info = {}
            if info.get("restarts", 0) >= 1 and info.get("status") == "RUNNING":
                restarted_ms = now_ms()
            time.sleep(0.02)
        while True:
            after = [t for t in received_times(out_dir) if t >= restarted_ms]
            if after:
                first = after[0]
                break
            if time.monotonic() > deadline:
                raise SystemExit("no result after the restart within 120 s")
            time.sleep(0.05)
        job.cancel()
    return (first - killed_ms) / 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    state = sub.add_parser("state")
    state.add_argument("--keys", type=int, default=1_000_000)
    state.add_argument("--members", type=int, default=2)
    state.add_argument("--snapshots", type=int, default=3)
    state.add_argument("--restart", action="store_true", help="then restart the job and report its restore")
    recovery = sub.add_parser("recovery")
    recovery.add_argument("--members", type=int, default=3)
    recovery.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.what == "state":
        measure_state(args.keys, args.members, args.snapshots, args.restart)
    else:
        times = [measure_recovery(args.members) for _ in range(args.runs)]
        print(f"recovery on {args.members} members (kill member 1 -> first result after the restore): "
              + ", ".join(f"{t:.2f} s" for t in times) + f"; median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
