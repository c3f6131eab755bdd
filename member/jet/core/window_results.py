"""What a window emits: Jet's WindowResult and KeyedWindowResult.

Windows are ``[start, end)`` in event-time milliseconds, aligned to the epoch. ``is_early`` is
True for a result emitted before the window closed (``set_early_results_period``). Both are
tuples (fast to build and to pickle); a keyed result is also a (key, result) entry through
``key`` and ``result``.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class WindowResult(NamedTuple):
    """The result of a non-keyed window ``[start, end)``."""

    start: int
    end: int
    result: Any
    is_early: bool = False


class KeyedWindowResult(NamedTuple):
    """The result of one key's window ``[start, end)``."""

    start: int
    end: int
    key: Any
    result: Any
    is_early: bool = False
