"""Plain-Python oracles of co-grouping and joins over events ``(ts, key, value)``, and the
partly out-of-order event lists the tests feed them (every event within the allowed lag of the
highest before it, so none is late)."""

from __future__ import annotations

import random
from collections import defaultdict

from jet.core.window_results import KeyedWindowResult, WindowResult

from tests.pipeline.stream_support import sliding_windows

ALLOWED_LAG_MS = 50


def out_of_order_events(n: int, seed: int, tag: str, span_ms: int = 3000, keys: str = "abcde",
                        jitter_ms: int = 30) -> list:
    """``n`` events ``(ts, key, f"{tag}{i}")``, each up to ``jitter_ms`` out of order."""
    rng = random.Random(seed)
    stamps = sorted(rng.randrange(span_ms) for _ in range(n))
    stamps = [ts + rng.randrange(jitter_ms) for ts in stamps]
    return [(ts, rng.choice(keys), f"{tag}{i}") for i, ts in enumerate(stamps)]


def _window_groups(inputs: list, size_ms: int, slide_ms: int, keyed: bool) -> dict:
    """(start, end, key) -> per input the events of that window."""
    groups: dict = defaultdict(lambda: [[] for _ in inputs])
    for ordinal, events in enumerate(inputs):
        for event in events:
            for start, end in sliding_windows(event[0], size_ms, slide_ms):
                groups[(start, end, event[1] if keyed else None)][ordinal].append(event)
    return groups


def _session_groups(inputs: list, timeout_ms: int, keyed: bool) -> dict:
    """(start, end, key) -> per input the events of that session (sessions over all inputs)."""
    by_key: dict = defaultdict(list)
    for ordinal, events in enumerate(inputs):
        for event in events:
            by_key[event[1] if keyed else None].append((event[0], ordinal, event))
    groups: dict = {}
    for key, tagged in by_key.items():
        tagged.sort(key=lambda t: t[0])
        members: list = []
        start = end = None
        for ts, ordinal, event in tagged:
            if end is not None and ts > end:
                groups[(start, end, key)] = members
                members, start, end = [], None, None
            if start is None:
                start, end, members = ts, ts + timeout_ms, [[] for _ in inputs]
            end = max(end, ts + timeout_ms)
            members[ordinal].append(event)
        groups[(start, end, key)] = members
    return groups


def groups(inputs: list, window: tuple, keyed: bool = True) -> dict:
    """The co-grouped windows: ``window`` is ("sliding", size, slide) or ("session", timeout)."""
    if window[0] == "session":
        return _session_groups(inputs, window[1], keyed)
    return _window_groups(inputs, window[1], window[2], keyed)


def co_counts(inputs: list, window: tuple, keyed: bool = True) -> list:
    """Sorted window results whose result is the tuple of each input's count."""
    results = []
    for (start, end, key), members in groups(inputs, window, keyed).items():
        counts = tuple(len(m) for m in members)
        results.append(KeyedWindowResult(start, end, key, counts) if keyed else WindowResult(start, end, counts))
    return sorted(results)


def window_join(left: list, right: list, window: tuple, how: str = "inner") -> list:
    """Sorted ``(left value, right value or None)`` of each pair sharing a key and window."""
    pairs = []
    for lefts, rights in groups([left, right], window).values():
        if rights:
            pairs.extend((a[2], b[2]) for a in lefts for b in rights)
        elif how == "left":
            pairs.extend((a[2], None) for a in lefts)
    return sorted(pairs, key=repr)


def interval_join(left: list, right: list, lower_ms: int, upper_ms: int) -> list:
    """Sorted ``(max ts, (left value, right value))`` for ``b.ts`` in ``[a.ts - lower, a.ts + upper]``."""
    return sorted((max(a[0], b[0]), (a[2], b[2])) for a in left for b in right
                  if a[1] == b[1] and a[0] - lower_ms <= b[0] <= a[0] + upper_ms)
