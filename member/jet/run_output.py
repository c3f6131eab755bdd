"""What ``jet run`` tells the user: the list sinks' results, the results file, a job's failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from jet.execution import JobFailedError
from jet.execution.tracebacks import ENGINE_FRAMES_HEADER

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


def failure_report(failure: JobFailedError, engine_frames: bool = False) -> str:
    """One message for a failed job: where it failed (stage, processor, member), then the
    traceback with the user's frames first (which ends with the error itself); the engine
    frames that called the user's code only when ``engine_frames``."""
    where = _where(failure.tasklet, getattr(failure, "member_index", None))
    text = failure.traceback_text
    if not engine_frames and ENGINE_FRAMES_HEADER in text:
        text = text[:text.index(ENGINE_FRAMES_HEADER)] + "(engine frames not shown: --log-level DEBUG shows them)"
    text = text.rstrip("\n")
    if not text:  # e.g. a cancel: the message is all there is
        return f"job failed{where}: {failure}"
    return f"job failed{where}:\n{text}"


def _where(tasklet: str, member: int | None) -> str:
    """`` in stage 'map', processor #0, on member 1`` for a processor's tasklet ``map#0``."""
    stage, _, processor = tasklet.rpartition("#")
    if stage and processor.isdigit():
        place = f" in stage {stage!r}, processor #{processor}"
    else:
        place = f" in {tasklet}" if tasklet else ""
    return place + (f", on member {member}" if member is not None else "")
