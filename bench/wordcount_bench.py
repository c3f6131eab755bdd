"""Word count over a generated corpus, side by side in one run (the Pipeline issue's benchmark).

    python bench/wordcount_bench.py --mb 100

Contenders: `jet run` (several member/thread settings; ``--jet-metrics on,off`` adds runs
without the metrics counting, ``--repeat`` keeps the best of several runs), a plain single-process Python loop, a
plain 2-process Python word count, PySpark's DataFrame and RDD APIs in local[2], and Bytewax
with 2 processes. Each runs as its own command; wall time includes start-up, "processing"
excludes it where the contender reports it, and peak memory is the largest sum of RSS over the
command's whole process tree, sampled every 50 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from corpus import write_corpus  # noqa: E402


def tree_rss_bytes(pid: int) -> int:
    """Sum of RSS of ``pid`` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += rss.get(current, 0)
        stack.extend(children.get(current, []))
    return total


def measure(command: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Run ``command``; return (wall seconds, peak tree RSS bytes, combined output)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})}, cwd=ROOT)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, tree_rss_bytes(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{output[-3000:]}")
    return wall, peak, output


def seconds_in(output: str, pattern: str) -> float | None:
    match = re.search(pattern, output)
    return float(match.group(1)) if match else None


def bytewax(corpus_dir: str, processes: int) -> tuple[float, int, str]:
    """Bytewax with ``processes`` processes (-i/-a), started together and timed as one."""
    addresses = ";".join(f"127.0.0.1:{2101 + i}" for i in range(processes))
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "bytewax.run", "bytewax_wordcount:flow",
                               "-i", str(i), "-a", addresses], cwd=HERE, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env={**os.environ, "CORPUS_DIR": corpus_dir}) for i in range(processes)]
    peak = 0
    while any(p.poll() is None for p in procs):
        peak = max(peak, sum(tree_rss_bytes(p.pid) for p in procs))
        time.sleep(0.05)
    wall = time.perf_counter() - started
    output = "".join(p.stdout.read() for p in procs)
    if any(p.returncode for p in procs):
        raise RuntimeError(f"bytewax failed:\n{output[-3000:]}")
    return wall, peak, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--jet", default="1x1,2x1", help="member x thread settings for jet run")
    parser.add_argument("--jet-metrics", default="on", choices=("on", "off", "on,off", "off,on"),
                        help="jet run with its metrics counting on, off, or both (the cost of counting)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each jet setting (the best is kept)")
    parser.add_argument("--skip", default="", help="comma list of contenders to skip")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    workdir = tempfile.mkdtemp(prefix="jet-wordcount-")
    corpus = os.path.join(workdir, "corpus.txt")
    write_corpus(corpus, args.mb)
    with open(corpus, encoding="utf-8") as text:
        words = sum(len(line.lower().split()) for line in text)
    split_dir = os.path.join(workdir, "parts")
    os.makedirs(split_dir)
    with open(corpus, encoding="utf-8") as text:
        lines = text.readlines()
    for i in range(2):
        with open(os.path.join(split_dir, f"part-{i}.txt"), "w", encoding="utf-8") as part:
            part.writelines(lines[i * len(lines) // 2:(i + 1) * len(lines) // 2])
    del lines
    print(f"corpus: {args.mb:g} MB, {words:,} words, {os.cpu_count()} cores")
    rows = []

    def record(name: str, wall: float, peak: int, processing: float | None) -> None:
        rows.append((name, wall, processing, peak))
        shown = f"{processing:7.2f}" if processing else "      -"
        print(f"{name:<34} wall {wall:7.2f} s  processing {shown} s  "
              f"{words / wall:12,.0f} words/s (wall)  peak {peak / 2**20:7.0f} MiB", flush=True)

    python = sys.executable
    if "plain" not in skip:
        wall, peak, out = measure([python, os.path.join(HERE, "plain_wordcount.py"), corpus, "1"])
        record("plain Python, 1 process", wall, peak, seconds_in(out, r"seconds=([\d.]+)"))
        wall, peak, out = measure([python, os.path.join(HERE, "plain_wordcount.py"), corpus, "2"])
        record("plain Python, 2 processes", wall, peak, seconds_in(out, r"seconds=([\d.]+)"))
    for setting in filter(None, args.jet.split(",")):
        members, threads = setting.split("x")
        for metrics in args.jet_metrics.split(","):
            best = None
            for _ in range(max(1, args.repeat)):
                wall, peak, out = measure(["jet", "--log-level", "WARNING", "run", "--members", members,
                                           "--threads", threads, f"--{'' if metrics == 'on' else 'no-'}metrics",
                                           os.path.join(HERE, "wordcount_pipeline.py"), corpus])
                assert f"[{words}]" in out.replace(",", "").replace(" ", "") or str(words) in out, out[-500:]
                processing = seconds_in(out, r"job (?:ran|completed) in ([\d.]+) s")
                if best is None or (processing or wall) < (best[2] or best[0]):
                    best = (wall, peak, processing)
            record(f"jet run, {members} member(s) x {threads} thread(s)"
                   + ("" if metrics == "on" else ", metrics off"), *best)
    if "spark" not in skip:
        for api in ("dataframe", "rdd"):
            wall, peak, out = measure([python, os.path.join(HERE, "spark_wordcount.py"), corpus, api])
            record(f"PySpark {api}, local[2]", wall, peak, seconds_in(out, r"seconds=([\d.]+)"))
    if "bytewax" not in skip:
        wall, peak, _ = bytewax(split_dir, 2)
        record("Bytewax, 2 processes", wall, peak, None)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
