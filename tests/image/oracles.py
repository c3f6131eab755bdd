"""What the examples must compute, in plain Python over the same data (no engine involved),
and readers of what a run printed or logged."""

from __future__ import annotations

import ast
import csv
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = EXAMPLES / "data"
EXAMPLE_WORD = re.compile(r"[a-z']+")  # the word of examples/wordcount.py and wordcount_dag.py


def example_word_counts(text: str) -> Counter:
    """Word counts as the word-count examples define words."""
    return Counter(EXAMPLE_WORD.findall(text.lower()))


def whitespace_word_counts(text: str) -> Counter:
    """Word counts of the word-count JetJob (``line.lower().split()``)."""
    return Counter(text.lower().split())


def sector_values(trades: Path = DATA / "trades.jsonl", companies: Path = DATA / "companies.csv") -> dict[str, float]:
    """examples/enrichment.py: the value (quantity x price) traded per company sector."""
    with open(companies, newline="", encoding="utf-8") as rows:
        sector_of = {row["symbol"]: row["sector"] for row in csv.DictReader(rows)}
    totals: dict[str, float] = defaultdict(float)
    for line in trades.read_text(encoding="utf-8").splitlines():
        trade = json.loads(line)
        totals[sector_of.get(trade["symbol"], "unknown")] += round(trade["quantity"] * trade["price"], 2)
    return dict(totals)


def station_averages(path: Path = DATA / "temperatures.csv") -> dict[str, float]:
    """examples/grouped_average.py: the mean temperature per station."""
    readings: dict[str, list[float]] = defaultdict(list)
    with open(path, newline="", encoding="utf-8") as rows:
        for row in csv.DictReader(rows):
            readings[row["station"]].append(float(row["celsius"]))
    return {station: sum(values) / len(values) for station, values in readings.items()}


def region_totals(path: Path = DATA / "sales.csv") -> dict[str, int]:
    """examples/jetjob-spark.yaml: the amount sold per region."""
    totals: Counter = Counter()
    with open(path, newline="", encoding="utf-8") as rows:
        for row in csv.DictReader(rows):
            totals[row["region"]] += int(row["amount"])
    return dict(totals)


def check_top_words(ranking: list[tuple[str, int]], counts: Counter, n: int) -> None:
    """``ranking`` is a correct top ``n`` of ``counts``: right counts, descending, and no word
    left out that counts more than one let in (words with equal counts may come in any order)."""
    assert len(ranking) == n, ranking
    assert all(counts[word] == count for word, count in ranking), (ranking, counts.most_common(n))
    assert [count for _, count in ranking] == [count for _, count in counts.most_common(n)], ranking


def printed_results(output: str) -> dict[str, list[Any]]:
    """The list-sink results ``jet run`` printed: ``result 'name': N item(s)`` and one
    ``repr`` per item below it."""
    results: dict[str, list[Any]] = {}
    current: list[Any] | None = None
    for line in output.splitlines():
        header = re.match(r"result '([^']+)': \d+ item\(s\)$", line)
        if header:
            current = results.setdefault(header.group(1), [])
        elif current is not None and line.startswith("  ") and not line.startswith("  ..."):
            current.append(ast.literal_eval(line.strip()))
        else:
            current = None
    return results


def json_lines(directory: Path) -> list[Any]:
    """The items of the JSON-lines files a ``Sinks.jsonl`` wrote (JSON arrays as tuples)."""
    items = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            items.append(tuple(item) if isinstance(item, list) else item)
    return items


def logged_items(log: str, vertex: str) -> list[Any]:
    """The items a logger-sink vertex logged (``repr`` form, one per line)."""
    pattern = re.compile(rf"INFO\s+jet\.processor\.{re.escape(vertex)}#\d+: (.*)$", re.MULTILINE)
    return [ast.literal_eval(message) for message in pattern.findall(log)]


def logged_ranking(log: str) -> list[tuple[str, int]]:
    """The ``{word:>12} {count}`` lines the word-count examples log (the first one after the
    log record's prefix)."""
    lines = re.findall(r"(?:^|#\d+: )[ ]*([a-z']+) (\d+)$", log, re.MULTILINE)
    return [(word, int(count)) for word, count in lines]
