"""What ``jet run`` tells the user: the list sinks' results, the results file, a job's failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

SHOWN_ITEMS = 20


def print_results(results: dict[str, list], out: TextIO, shown: int = SHOWN_ITEMS,
                  written_to: str | None = None) -> None:
    """Each list sink's item count and its first ``shown`` items (just the count when the items
    were written to a file)."""
    for name, items in results.items():
        if written_to is not None:
            print(f"result {name!r}: {len(items)} item(s), written to {written_to}", file=out)
            continue
        print(f"result {name!r}: {len(items)} item(s)", file=out)
        for item in items[:shown]:
            print(f"  {item!r}", file=out)
        if len(items) > shown:
            print(f"  ... {len(items) - shown} more (--output FILE writes them all)", file=out)


def print_latest(latest: dict[str, list], out: TextIO) -> None:
    """Each observable sink's newest items when the job ended (what the live table showed last;
    outside a terminal this is where a stream's results are seen)."""
    for name, items in latest.items():
        print(f"observable {name!r}: its {len(items)} newest item(s)", file=out)
        for item in items:
            print(f"  {item!r}", file=out)


def json_value(value: Any) -> Any:
    """``value`` as JSON can hold it: tuples as arrays, sets as sorted arrays, dict keys JSON does
    not allow and other values as their ``str()``."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {key if isinstance(key, (str, int, float, bool)) or key is None else str(key): json_value(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [json_value(item) for item in sorted(value, key=repr)]
    return str(value)


def write_json_lines(results: dict[str, list], path: str | Path) -> int:
    """Write every list sink's items to ``path``, one JSON value per line: the item itself when the
    job has one list sink, ``{"sink": name, "item": item}`` when it has several. Returns the
    number of lines."""
    tagged = len(results) > 1
    lines = 0
    with open(path, "w", encoding="utf-8") as file:
        for name, items in results.items():
            for item in items:
                value = {"sink": name, "item": json_value(item)} if tagged else json_value(item)
                file.write(json.dumps(value, ensure_ascii=False) + "\n")
                lines += 1
    return lines


