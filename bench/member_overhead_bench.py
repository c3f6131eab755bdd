"""What grows with the member count: start-up, a tiny job's round trip, CPU per member at idle.

    PYTHONPATH=member python3 bench/member_overhead_bench.py [--members 1 2 4 8 16] [--idle-s 5]
        [--rounds 3] [--lines 50000] [--threads]
        [--setting NAME=VALUE] [--hold S]

For each k in ``--members`` it starts ``jet.local_cluster(k)`` and measures:

- ``start s``: wall time from the call to ``cluster_ready`` (every member connected to every other);
- ``tiny ms``: median of ``--rounds`` round trips of a 10-item DAG (source -> distributed edge ->
  sink on every member), submit to ``join`` returning, after one such job not counted;
- ``tiny cpu``: CPU milliseconds of all the members together per tiny job;
- ``probe us``: CPU microseconds (median over members and ``--rounds`` jobs) of one fixed piece
  of work that every member's source does inside a tiny job: unpickle the tiny DAG and build its
  plan as member 1 of 4. The work is the same at every k, so what it gains with k is what sharing
  the cores costs each member's own work, not work that grows with k (``probe hot us``: the same
  work done back to back in the bench's process);
- ``no job``: CPU seconds (utime + stime from ``/proc/<pid>/stat``) per member per second of wall
  time while the cluster idles with no job, over ``--idle-s`` seconds;
- ``idle job``: the same while a streaming job whose source never emits runs (source -> distributed
  edge -> sink, so every member has a sender and a receiver per remote member), over ``--idle-s``;
  its source says ``needs_polling = False``, so an idle member's cooperative thread parks;
- ``polled src``: the same with a source that does not say so (polled every 1 ms, as a source
  waiting for external data is);
- ``wc cpu s``: CPU seconds per member (mean) spent while a word count of ``--lines`` lines runs,
  and ``wc s`` its wall time.

CPU per member per second is a fraction of one core: 16 members at 0.1 each need 1.6 of the 2 cores.
``--threads``: for the last k, the idle job's CPU split by thread name (from
``/proc/<pid>/task/<tid>/schedstat``; Python thread names from ``py-spy dump`` when ``pip install
py-spy`` is there); ``--tiny-threads N``: for the last k, N tiny jobs' CPU split so, per job.
``--setting name=value`` passes a member setting to every member (say
``flow_control_period_ms=1000``), for experiments. ``--hold S`` keeps the last k's idle job running S
seconds more and prints the member pids, to attach a profiler (``py-spy record --pid <pid>``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import jet  # noqa: E402
from cluster_bench import word_count  # noqa: E402  (the same word count DAG)
from contention_bench import init_work, tiny_dag_bytes  # noqa: E402  (the probe's fixed work)
from jet.core import DAG, Edge  # noqa: E402
from jet.core.processor import Processor  # noqa: E402
from jet.core.processors import items_source_p, noop_p  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


class PolledIdleSourceP(Processor):
    """A streaming source that never emits and never completes, polled like one that waits for
    external data (its cooperative thread keeps the 1 ms backoff)."""

    def complete(self) -> bool:
        return False


class IdleSourceP(PolledIdleSourceP):
    """The same, saying nothing outside the job can give it work: with it every tasklet of an
    idle member waits for a wake-up, so its thread parks."""

    needs_polling = False


def idle_job(source_p: type[Processor] = IdleSourceP) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", source_p, 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def tiny() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(range(10))), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


PROBE_PLAN_MEMBERS = 4


class ProbeSourceP(Processor):
    """A source that emits nothing and only does the probe's fixed work, timed on its own thread,
    appending the CPU microseconds to ``path`` (the members run on this machine)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._work = init_work(tiny_dag_bytes(), PROBE_PLAN_MEMBERS)

    def complete(self) -> bool:
        started = time.thread_time_ns()
        self._work()
        spent = time.thread_time_ns() - started
        with open(self._path, "a") as out:
            out.write(f"{spent / 1000:.1f}\n")
        return True


def probe(path: str) -> DAG:
    """The tiny job's DAG with the probe as its source."""
    dag = DAG()
    source = dag.new_vertex("source", lambda: ProbeSourceP(path), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def probe_hot_us(rounds: int) -> float:
    """The probe's work done ``rounds`` times back to back here: median CPU microseconds."""
    work = init_work(tiny_dag_bytes(), PROBE_PLAN_MEMBERS)
    work()
    spent = []
    for _ in range(rounds):
        started = time.thread_time_ns()
        work()
        spent.append((time.thread_time_ns() - started) / 1000)
    return statistics.median(spent)


def cpu_seconds(pids: list[int]) -> list[float]:
    result = []
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        result.append((int(fields[11]) + int(fields[12])) / TICK)  # utime, stime (fields 14, 15)
    return result


def thread_cpu(pids: list[int]) -> dict[tuple[int, int], tuple[str, float]]:
    """(pid, tid) -> (thread name with digits as N, CPU seconds) of every thread of ``pids``:
    from ``schedstat`` (nanoseconds; a short-lived burst shows) where the kernel has it, else from
    ``stat`` (10 ms ticks)."""
    result = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                head, tail = (task / "stat").read_text().rsplit(")", 1)
                schedstat = task / "schedstat"
                cpu = (int(schedstat.read_text().split()[0]) / 1e9 if schedstat.exists()
                       else (int(tail.split()[11]) + int(tail.split()[12])) / TICK)
            except OSError:
                continue  # the thread ended
            result[(pid, int(task.name))] = (re.sub(r"[0-9]+", "N", head.split("(", 1)[1]), cpu)
    return result


def python_thread_names(pid: int) -> dict[int, str]:
    """Native thread id -> Python thread name, from ``py-spy dump`` (empty without py-spy)."""
    try:
        out = subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \([a-z]+\): "(.*)"$', out, re.M)}


def thread_breakdown(pids: list[int], seconds: float) -> list[tuple[str, float]]:
    """CPU seconds per member per wall second by thread name (threads that ran), over ``seconds``."""
    started = time.perf_counter()
    return cpu_by_thread(pids, lambda: time.sleep(seconds), lambda: time.perf_counter() - started)


def cpu_by_thread(pids: list[int], work: Callable[[], None], per: Callable[[], float]) -> list[tuple[str, float]]:
    """CPU seconds per member by thread name (threads that ran) while ``work()`` runs, divided by
    ``per()`` (say the wall seconds, or the number of jobs run)."""
    before = thread_cpu(pids)
    work()
    after, wall = thread_cpu(pids), per()
    names = {}
    for pid in pids:
        names.update({(pid, tid): name for tid, name in python_thread_names(pid).items()})
    after = {key: (re.sub(r"[0-9]+", "N", names[key]) if key in names else name, cpu)
             for key, (name, cpu) in after.items()}
    by_name: dict[str, float] = {}
    for key, (name, cpu) in after.items():
        by_name[name] = by_name.get(name, 0.0) + cpu - before.get(key, (name, 0.0))[1]
    return sorted(((n, c / wall / len(pids)) for n, c in by_name.items()), key=lambda e: -e[1])


def cpu_during(pids: list[int], seconds: float) -> float:
    """Mean CPU seconds per member per wall second over ``seconds``."""
    before, started = cpu_seconds(pids), time.perf_counter()
    time.sleep(seconds)
    after, wall = cpu_seconds(pids), time.perf_counter() - started
    return statistics.mean(a - b for a, b in zip(after, before)) / wall


def run_idle_job(cluster, source_p: type[Processor], measure: Callable[[], float]) -> float:
    """``measure()`` while the idle job with ``source_p`` runs; the job is cancelled after."""
    job = cluster.new_job(idle_job(source_p))
    while job.info()["status"] != "RUNNING":
        time.sleep(0.01)
    time.sleep(0.5)
    try:
        return measure()
    finally:
        job.cancel()
        try:
            job.join(30)
        except Exception:  # noqa: BLE001 - cancelled
            pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--hold", type=float, default=0.0,
                        help="keep the idle job of the last k running this many seconds more (to profile)")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a member setting for every member (say flow_control_period_ms=1000)")
    parser.add_argument("--threads", action="store_true",
                        help="for the last k, also CPU per member per second by thread name during the idle job")
    parser.add_argument("--tiny-threads", type=int, default=0, metavar="N",
                        help="for the last k, also run N tiny jobs and print CPU ms per job by thread name, "
                             "of each member but the coordinator (mean) and of the coordinator")
    args = parser.parse_args()
    breakdown: list[tuple[str, float]] = []
    tiny_breakdowns: list[tuple[str, list[tuple[str, float]]]] = []
    settings = dict(item.split("=", 1) for item in args.setting)
    lines = [f"the quick brown fox {i % 1000} jumps over the lazy dog {i % 77}" for i in range(args.lines)]
    print(f"probe hot us: {probe_hot_us(max(args.rounds, 50)):.0f}")
    print(f"{'members':>7} {'start s':>8} {'tiny ms':>8} {'tiny cpu':>8} {'probe us':>8} {'no job':>7} {'idle job':>9} "
          f"{'polled src':>10} {'wc s':>6} {'wc cpu s':>9}", flush=True)
    for members in args.members:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as logs, jet.local_cluster(members, log_dir=logs, **settings) as cluster:
            start = time.perf_counter() - started
            pids = [p.pid for p in cluster.members]
            tinies = []
            cluster.new_job(tiny()).join(60)  # the first job of a cluster pays its imports
            tiny_cpu_before = sum(cpu_seconds(pids))
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                cluster.new_job(tiny()).join(60)
                tinies.append((time.perf_counter() - t0) * 1000)
            tiny_cpu = (sum(cpu_seconds(pids)) - tiny_cpu_before) / args.rounds * 1000
            probes = Path(logs) / "probe-us.txt"
            cluster.new_job(probe(str(probes))).join(60)  # not counted: the first pays the probe's imports
            probes.unlink()
            for _ in range(args.rounds):
                cluster.new_job(probe(str(probes))).join(60)
            probe_us = statistics.median(float(line) for line in probes.read_text().split())
            no_job = cpu_during(pids, args.idle_s)
            polled = run_idle_job(cluster, PolledIdleSourceP, lambda: cpu_during(pids, args.idle_s))
            last = members == args.members[-1]

            def measure() -> float:
                nonlocal breakdown
                cpu = cpu_during(pids, args.idle_s)
                if args.threads and last:
                    breakdown = thread_breakdown(pids, args.idle_s)
                if args.hold and last:
                    print(f"holding the idle job {args.hold} s; member pids {pids}", flush=True)
                    time.sleep(args.hold)
                return cpu

            idle = run_idle_job(cluster, IdleSourceP, measure)
            if args.tiny_threads and last:
                def tiny_jobs() -> None:
                    for _ in range(args.tiny_threads):
                        cluster.new_job(tiny()).join(60)

                others = pids[1:] or pids
                tiny_breakdowns = [
                    (f"each member but the coordinator (mean of {len(others)})",
                     cpu_by_thread(others, tiny_jobs, lambda: args.tiny_threads / 1000)),
                    ("the coordinator (member 0)", cpu_by_thread(pids[:1], tiny_jobs, lambda: args.tiny_threads / 1000))]
            before, t0 = cpu_seconds(pids), time.perf_counter()
            cluster.new_job(word_count(lines)).join(600)
            wc = time.perf_counter() - t0
            wc_cpu = statistics.mean(a - b for a, b in zip(cpu_seconds(pids), before))
        print(f"{members:>7} {start:8.2f} {statistics.median(tinies):8.1f} {tiny_cpu:8.0f} {probe_us:8.0f} {no_job:7.3f} {idle:9.3f} "
              f"{polled:10.3f} {wc:6.2f} {wc_cpu:9.2f}", flush=True)
    if breakdown:
        print("idle job, CPU s per member per s by thread:")
        for name, cpu in breakdown:
            if cpu > 0:
                print(f"  {name:<16} {cpu:.4f}")
    for whose, threads in tiny_breakdowns:
        print(f"tiny job, CPU ms per job by thread, {whose}: {sum(cpu for _, cpu in threads):.2f}")
        for name, cpu in threads:
            if cpu >= 0.005:
                print(f"  {name:<28} {cpu:6.2f}")


if __name__ == "__main__":
    main()
