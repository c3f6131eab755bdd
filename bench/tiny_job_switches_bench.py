"""What a tiny job costs each member in system calls and thread switches.

    python bench/tiny_job_switches_bench.py [--members 16] [--jobs 150]

Starts ``jet.local_cluster(members)``, runs five tiny jobs (``member_overhead_bench.tiny``: ten
items, a source and a sink on a distributed edge) to warm up, then ``jobs`` more back to back,
and prints the wall time per job and, per member per job, the write system calls
(``/proc/<pid>/io`` ``syscw``) and the voluntary and involuntary context switches of all its
threads (``/proc/<pid>/task/*/status``). A voluntary switch is a thread that blocked: on a lock,
the GIL, a queue or a socket; with many threads per member each hand-over between them is one.
To compare two trees, run each tree's copy with its own ``member`` directory on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT / "bench")]

import jet  # noqa: E402
from member_overhead_bench import tiny  # noqa: E402


def counters(pids: list[int]) -> tuple[int, int, int]:
    """(write syscalls, voluntary switches, involuntary switches) summed over ``pids``."""
    writes = voluntary = involuntary = 0
    for pid in pids:
        for line in open(f"/proc/{pid}/io"):
            if line.startswith("syscw"):
                writes += int(line.split()[1])
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                lines = open(f"/proc/{pid}/task/{tid}/status").read().splitlines()
            except OSError:  # the thread ended
                continue
            for line in lines:
                if line.startswith("voluntary_ctxt_switches"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    involuntary += int(line.split()[1])
    return writes, voluntary, involuntary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=150)
    args = parser.parse_args()
    k, n = args.members, args.jobs
    with tempfile.TemporaryDirectory() as logs, jet.local_cluster(k, log_dir=logs) as cluster:
        for _ in range(5):
            cluster.new_job(tiny()).join(60)
        pids = [member.pid for member in cluster.members]
        time.sleep(1.0)
        before, started = counters(pids), time.perf_counter()
        for _ in range(n):
            cluster.new_job(tiny()).join(60)
        elapsed, after = time.perf_counter() - started, counters(pids)
    writes, voluntary, involuntary = ((b - a) / n / k for a, b in zip(before, after))
    print(f"members={k} jobs={n}: {elapsed / n * 1000:.1f} ms per tiny job; per member per job "
          f"{writes:.1f} write syscalls, {voluntary:.1f} voluntary and {involuntary:.1f} involuntary "
          f"context switches")


if __name__ == "__main__":
    main()
