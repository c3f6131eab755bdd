"""The cost of metrics counting, on and off alternately in one process.

This machine's speed drifts by tens of percent over seconds (a shared VM), which swamps a
cost of a few percent between separate `jet run`s. Here one process runs the word count
pipeline in-process (one member, one cooperative thread) over the same lines, alternating
``metrics_enabled`` on and off ``--pairs`` times, short runs each, and reports the median of
the per-pair ratios: the drift moves both halves of a pair alike.

    python bench/metrics_cost_bench.py --mb 10 --pairs 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from corpus import write_corpus  # noqa: E402
from wordcount_pipeline import pipeline  # noqa: E402

from jet.execution.runner import start  # noqa: E402
from jet.job_file import to_dag  # noqa: E402


def run_once(corpus: str, metrics_enabled: bool) -> float:
    """CPU seconds of one in-process word count (this process's user + system time)."""
    dag = to_dag(pipeline(corpus), 1)
    before = time.process_time()
    start(dag, 1, job_name="metrics-cost", metrics_enabled=metrics_enabled).join()
    return time.process_time() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--pairs", type=int, default=30)
    args = parser.parse_args()
    corpus = os.path.join(tempfile.mkdtemp(prefix="jet-metrics-cost-"), "corpus.txt")
    write_corpus(corpus, args.mb)
    run_once(corpus, True)  # warm-up: imports, caches
    ratios, on_times, off_times = [], [], []
    for pair in range(args.pairs):
        order = (True, False) if pair % 2 == 0 else (False, True)
        times = {enabled: run_once(corpus, enabled) for enabled in order}
        on_times.append(times[True])
        off_times.append(times[False])
        ratios.append(times[True] / times[False])
    print(f"corpus {args.mb:g} MB, {args.pairs} pairs, CPU s per run: metrics on median "
          f"{statistics.median(on_times):.3f}, off median {statistics.median(off_times):.3f}")
    quartiles = statistics.quantiles(ratios, n=4)
    print(f"cost of metrics (median of per-pair on/off ratios): {statistics.median(ratios) - 1:+.2%} "
          f"(quartiles {quartiles[0] - 1:+.2%} .. {quartiles[2] - 1:+.2%})")
    half_width = 1.96 * statistics.stdev(ratios) / len(ratios) ** 0.5
    print(f"mean of the ratios: {statistics.fmean(ratios) - 1:+.2%} +- {half_width:.2%} (95 % interval)")


if __name__ == "__main__":
    main()
