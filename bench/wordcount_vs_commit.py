"""Word count: `jet run` of this tree and of another checkout against plain 2-process Python,
interleaved round by round, so that this VM's drift (tens of percent over seconds) moves them alike.

    git worktree add /tmp/base <commit>
    python bench/wordcount_vs_commit.py <corpus.txt> <rounds> /tmp/base

The corpus is the one `wordcount_bench.py` writes (its temporary directory's corpus.txt).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def jet_run(root: str, corpus: str) -> float:
    """Wall seconds of `jet run --members 2 --threads 1` of the word count, with ``root``'s code."""
    # `python -m jet` is the `jet` command where the tree has it (it prestarts the members' fork server)
    module = "jet" if os.path.exists(os.path.join(root, "member", "jet", "__main__.py")) else "jet.cli"
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", module, "--log-level", "WARNING", "run", "--members", "2",
                             "--threads", "1", os.path.join(HERE, "wordcount_pipeline.py"), corpus],
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": f"{root}/member"},
                            cwd="/tmp")
    if result.returncode != 0:
        raise RuntimeError(f"jet run of {root} failed:\n{result.stderr[-2000:]}")
    return time.perf_counter() - started


def plain(corpus: str) -> float:
    """Wall seconds of the plain 2-process word count."""
    started = time.perf_counter()
    subprocess.run([sys.executable, os.path.join(HERE, "plain_wordcount.py"), corpus, "2"], check=True,
                   capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    corpus, rounds, other = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    walls: dict[str, list[float]] = {"plain": [], "this tree": [], other: []}
    for _ in range(rounds):
        walls["plain"].append(plain(corpus))
        walls["this tree"].append(jet_run(ROOT, corpus))
        walls[other].append(jet_run(other, corpus))
    for name, values in walls.items():
        print(f"{name:>20}: wall min {min(values):.2f} s, median {statistics.median(values):.2f} s")
    for name in ("this tree", other):
        ratios = [p / j for p, j in zip(walls["plain"], walls[name])]
        print(f"{name:>20}: plain/jet per round median {statistics.median(ratios):.1%}, "
              f"best against best {min(walls['plain']) / min(walls[name]):.1%}")


if __name__ == "__main__":
    main()
