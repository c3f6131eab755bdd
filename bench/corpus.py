"""A deterministic Zipf-distributed text corpus for the word-count benchmarks.

    python bench/corpus.py --mb 100 --out /tmp/corpus.txt

The same seed and size give the same bytes on every machine.
"""

from __future__ import annotations

import argparse
import itertools
import random

_SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "el", "an", "or", "is", "ud", "ve", "zo"]


def vocabulary(size: int, seed: int = 7) -> list[str]:
    """``size`` distinct pseudo-words, shortest (most frequent, by Zipf rank) first."""
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    for length in itertools.count(1):
        candidates = ["".join(p) for p in itertools.product(_SYLLABLES, repeat=length)]
        rng.shuffle(candidates)
        for word in candidates:
            if word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == size:
                    return words
    raise AssertionError("unreachable")


def generate_lines(target_bytes: int, seed: int = 42, vocabulary_size: int = 50_000,
                   exponent: float = 1.07, words_per_line: int = 12) -> list[str]:
    """Lines of Zipf-distributed words totalling about ``target_bytes``."""
    rng = random.Random(seed)
    vocab = vocabulary(vocabulary_size)
    weights = list(itertools.accumulate(1.0 / (rank ** exponent)
                                        for rank in range(1, vocabulary_size + 1)))
    lines: list[str] = []
    total = 0
    while total < target_bytes:
        words = rng.choices(vocab, cum_weights=weights, k=words_per_line * 256)
        for start in range(0, len(words), words_per_line):
            line = " ".join(words[start:start + words_per_line])
            if start % (words_per_line * 7) == 0:
                line = line.capitalize() + "."
            lines.append(line)
            total += len(line) + 1
    return lines


def write_corpus(path: str, megabytes: float, seed: int = 42) -> int:
    lines = generate_lines(int(megabytes * 1_000_000), seed)
    with open(path, "w", encoding="utf-8") as out:
        out.write("\n".join(lines))
        out.write("\n")
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=10.0, help="corpus size in megabytes")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    count = write_corpus(args.out, args.mb, args.seed)
    print(f"wrote {count} lines to {args.out}")


if __name__ == "__main__":
    main()
