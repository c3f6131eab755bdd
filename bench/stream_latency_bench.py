"""Stream latency: a 1 s tumbling-window count per key over a generated stream, Jet against
Bytewax and PyFlink on the same definition in one run (the Streaming issue's benchmark).

    python bench/stream_latency_bench.py [--systems jet,bytewax,pyflink]
        [--rates 10000,100000,200000,500000,1000000] [--members 1,2] [--seconds 20] [--warmup 3]
        [--guarantee none|at-least-once|exactly-once] [--snapshot-interval-ms 1000]
        [--jet-metrics on,off]

The definition: events from a generator at a fixed rate, timestamp = the time the event is due,
key = sequence % 100; 50 ms allowed lag (Jet's limiting lag, Bytewax's `EventClock` wait,
Flink's bounded out-of-orderness); 1 s tumbling windows counting per key; a sink that records
the wall-clock time it receives each result. Latency of a result = receive time - window end.
Jet runs on 1 and 2 members (`--members`), Bytewax with as many processes, PyFlink with
parallelism 2 (`--flink-parallelism`). Each run lasts ``--seconds``; windows starting within
``--warmup`` of its start are not measured; ``--grace`` more seconds let the last measured
windows arrive. A run that does not keep up is shown as saturated with the reason.
``--jet-metrics on,off`` runs Jet with and without its metrics counting (JobConfig
``metrics_enabled``), to measure what the counting costs.

PyFlink runs from its own virtual environment (``--flink-python``, default
/tmp/bench-venvs/pyflink/bin/python; see bench/requirements-stream.txt).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from stream_records import now_ms  # noqa: E402
from stream_stats import RunRecords, RunSummary, summarize  # noqa: E402

KEYS = 100
WINDOW_MS = 1000
SYSTEMS = ("jet", "bytewax", "pyflink")
DEFAULT_FLINK_PYTHON = "/tmp/bench-venvs/pyflink/bin/python"
STARTUP_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 10.0


@dataclass
class Run:
    """One row to measure: a system at a rate with a parallel setting."""

    system: str
    rate: int
    parallel: int
    metrics: bool = True
    """Jet only: JobConfig metrics_enabled."""

    @property
    def setting(self) -> str:
        if self.system == "jet":
            return f"{self.parallel} member{'s' if self.parallel > 1 else ''}" + ("" if self.metrics else ", metrics off")
        if self.system == "bytewax":
            return f"{self.parallel} process{'es' if self.parallel > 1 else ''}"
        return f"parallelism {self.parallel}"


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def run_processes(commands: list[tuple[list[str], dict[str, str]]], out_dir: str, start_file: str,
                  seconds: float, grace_s: float) -> float:
    """Start ``commands`` (each in its own session), wait until they agree a start, let them run
    ``seconds + grace_s`` from it, stop them; return the start (wall ms)."""
    processes = []
    try:
        for index, (command, env) in enumerate(commands):
            with open(os.path.join(out_dir, f"process-{index}.log"), "w") as log:
                processes.append(subprocess.Popen(command, cwd=HERE, env={**os.environ, **env}, stdout=log,
                                                  stderr=subprocess.STDOUT, start_new_session=True))
        launched = time.monotonic()
        while not os.path.exists(start_file):
            failed = [p for p in processes if p.poll() is not None]
            if failed or time.monotonic() - launched > STARTUP_TIMEOUT_S:
                raise RuntimeError(f"{commands[0][0]} did not start (see {out_dir}/process-*.log):\n"
                                   + Path(out_dir, "process-0.log").read_text()[-3000:])
            time.sleep(0.05)
        start = float(Path(start_file).read_text())
        time.sleep(max(0.0, (start + (seconds + grace_s) * 1000 - now_ms()) / 1000))
        return start
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def bytewax_commands(run: Run, out_dir: str, start_file: str) -> list[tuple[list[str], dict[str, str]]]:
    """One ``bytewax.run`` process per partition, joined by -i/-a when there are several."""
    env = {"STREAM_RATE": str(run.rate), "STREAM_PARTITIONS": str(run.parallel), "STREAM_OUT_DIR": out_dir,
           "STREAM_START_FILE": start_file, "PYTHONPATH": str(HERE)}
    command = [sys.executable, "-m", "bytewax.run", "bytewax_stream:flow"]
    if run.parallel == 1:
        return [(command, env)]
    addresses = ";".join(f"127.0.0.1:{port}" for port in free_ports(run.parallel))
    return [(command + ["-i", str(i), "-a", addresses], env) for i in range(run.parallel)]


def measure(run: Run, args: argparse.Namespace) -> RunSummary:
    """Run one row and summarise what its processes recorded."""
    with tempfile.TemporaryDirectory(prefix=f"stream-{run.system}-") as out_dir:
        start_file = os.path.join(out_dir, "start")
        jet_late = None
        if run.system == "jet":
            import jet_stream
            outcome = jet_stream.run(run.rate, run.parallel, args.seconds, args.warmup, out_dir, args.grace,
                                     args.guarantee, args.snapshot_interval_ms, run.metrics)
            start, jet_late = outcome["start_ms"], outcome["late"]
        elif run.system == "bytewax":
            start = run_processes(bytewax_commands(run, out_dir, start_file), out_dir, start_file,
                                  args.seconds, args.grace)
        else:
            command = [args.flink_python, str(HERE / "pyflink_stream.py"), "--rate", str(run.rate),
                       "--out-dir", out_dir, "--start-file", start_file, "--parallelism", str(run.parallel),
                       *args.flink_args.split()]
            start = run_processes([(command, {})], out_dir, start_file, args.seconds, args.grace)
        summary = summarize(RunRecords.read(out_dir), start, args.seconds, args.warmup, run.rate, KEYS, WINDOW_MS)
        if run.system == "jet":
            summary.late = jet_late
        return summary


HEADER = ("system", "setting", "events/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "events counted / expected",
          "late", "verdict")


def row(run: Run, summary: RunSummary) -> list[str]:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    counted = (f"{summary.events_counted:,} / {summary.events_expected:,}"
               f" ({100 * summary.events_counted / max(1, summary.events_expected):.1f} %)")
    reason = summary.saturated_because
    if reason:
        verdict = f"saturated: {reason}"
    elif summary.events_counted != summary.events_expected:
        verdict = f"kept up; {summary.events_expected - summary.events_counted:,} events not counted"
    else:
        verdict = "kept up"
    return [run.system, run.setting, f"{run.rate:,}", ms(summary.percentile(0.5)), ms(summary.percentile(0.9)),
            ms(summary.percentile(0.99)), ms(summary.percentile(1.0)), counted,
            "-" if summary.late is None else f"{summary.late:,}", verdict]


def markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join(" --- " for _ in HEADER) + "|"]
    return "\n".join(lines + ["| " + " | ".join(cells) + " |" for cells in rows])


def plan(args: argparse.Namespace) -> list[Run]:
    runs = []
    for rate in args.rates:
        for system in args.systems:
            if system == "pyflink":
                runs.extend(Run(system, rate, parallelism) for parallelism in args.flink_parallelism)
            elif system == "jet":
                runs.extend(Run(system, rate, members, metrics) for members in args.members
                            for metrics in args.jet_metrics)
            else:
                runs.extend(Run(system, rate, members) for members in args.members)
    return runs


def comma_ints(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of positive integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected a comma list of positive integers, got {text!r}")
    return values


def on_off_list(text: str) -> list[bool]:
    """``on,off`` -> [True, False]."""
    values = [part for part in text.split(",") if part]
    if not values or any(value not in ("on", "off") for value in values):
        raise argparse.ArgumentTypeError(f"expected a comma list of on and off, got {text!r}")
    return [value == "on" for value in values]


def comma_systems(text: str) -> list[str]:
    systems = [part for part in text.split(",") if part]
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown or not systems:
        raise argparse.ArgumentTypeError(f"unknown system(s) {unknown or text!r}; expected some of"
                                         f" {', '.join(SYSTEMS)}")
    return systems


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=comma_systems, default=list(SYSTEMS))
    parser.add_argument("--rates", type=comma_ints, default=[10_000, 100_000, 200_000, 500_000, 1_000_000],
                        help="events per second, comma separated")
    parser.add_argument("--members", type=comma_ints, default=[1, 2],
                        help="Jet members (and Bytewax processes), comma separated")
    parser.add_argument("--flink-parallelism", type=comma_ints, default=[2], help="PyFlink's parallelism")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each run")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of each run not measured")
    parser.add_argument("--grace", type=float, default=2.0, help="seconds after a run for its last windows")
    parser.add_argument("--guarantee", default="none", choices=("none", "at-least-once", "exactly-once"),
                        help="Jet's processing guarantee (snapshots every --snapshot-interval-ms)")
    parser.add_argument("--snapshot-interval-ms", type=int, default=1000)
    parser.add_argument("--jet-metrics", type=on_off_list, default=[True],
                        help="Jet's metrics counting in each Jet run: on, off or on,off [default: on]")
    parser.add_argument("--flink-python", default=DEFAULT_FLINK_PYTHON)
    parser.add_argument("--flink-args", default="", help="more options for pyflink_stream.py, space separated")
    args = parser.parse_args(argv)
    if args.seconds <= args.warmup + 2 * WINDOW_MS / 1000:
        parser.error(f"--seconds ({args.seconds}) must exceed --warmup ({args.warmup}) by at least 2 windows")
    if "pyflink" in args.systems and not os.access(args.flink_python, os.X_OK):
        parser.error(f"--flink-python {args.flink_python} is not an executable; make the PyFlink environment as"
                     f" bench/requirements-stream.txt says, or leave pyflink out of --systems")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"{os.cpu_count()} cores; {args.seconds:g} s per run, {args.warmup:g} s warm-up; "
          f"{KEYS} keys, {WINDOW_MS} ms tumbling windows, 50 ms allowed lag", flush=True)
    rows: list[list[str]] = []
    for run in plan(args):
        try:
            cells = row(run, measure(run, args))
        except Exception as error:  # one system failing must not hide the others' rows
            cells = [run.system, run.setting, f"{run.rate:,}"] + ["-"] * 6 + [f"failed: {error}".splitlines()[0]]
        rows.append(cells)
        print("  ".join(cells), flush=True)
    print()
    print(markdown(rows))


if __name__ == "__main__":
    main()
