"""Pre-generated events, cached on disk and split into shares for the source processors.

Generating costs ~11 us an event in Python, more than most queries: the events are made once
per configuration (cached under ``cache_dir``) and every system reads the same list, so a run
times the query, not the generator.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from dataclasses import astuple
from pathlib import Path

from .generator import GeneratorConfig, events

DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "nexmark-events"


def _name(config: GeneratorConfig) -> str:
    return hashlib.sha1(repr(astuple(config)).encode()).hexdigest()[:16]


def _dump(value: object, path: Path) -> None:
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    with open(partial, "wb") as file:
        pickle.dump(value, file, protocol=5)
    os.replace(partial, path)


def load(path: str | Path) -> list:
    """A list pickled by this module."""
    with open(path, "rb") as file:
        return pickle.load(file)


def generated(config: GeneratorConfig, cache_dir: Path = DEFAULT_CACHE_DIR) -> list:
    """Every event of ``config`` in emission order, as ``(timestamp_ms, event)`` pairs."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{_name(config)}.pkl"
    if path.exists():
        return load(path)
    made = list(events(config))
    _dump(made, path)
    return made


def share_path(directory: str | Path, index: int, count: int) -> Path:
    """Where share ``index`` of ``count`` is written."""
    return Path(directory) / f"share-{index}-of-{count}.pkl"


def write_shares(made: list, count: int, directory: str | Path) -> str:
    """Split ``made`` round-robin into ``count`` shares (share ``g`` has events ``g, g + count,
    ...``, so every share is in emission order) and write them to ``directory``."""
    for index in range(count):
        path = share_path(directory, index, count)
        if not path.exists():
            _dump(made[index::count], path)
    return str(directory)
