"""Plain Python word counts: one process, or N processes each counting a slice of the lines."""

import sys
import time
from collections import Counter
from multiprocessing import Pool


def count_lines(path, start, stop):
    counts = Counter()
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text):
            if start <= number < stop:
                counts.update(line.lower().split())
    return counts


def count_slice(args):
    return count_lines(*args)


def main(path, processes):
    started = time.perf_counter()
    if processes == 1:
        counts = count_lines(path, 0, sys.maxsize)
    else:
        with open(path, encoding="utf-8") as text:
            total = sum(1 for _ in text)
        bounds = [total * i // processes for i in range(processes + 1)]
        with Pool(processes) as pool:
            counts = Counter()
            for part in pool.map(count_slice, [(path, bounds[i], bounds[i + 1]) for i in range(processes)]):
                counts.update(part)
    print(f"words={sum(counts.values())} distinct={len(counts)} seconds={time.perf_counter() - started:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
