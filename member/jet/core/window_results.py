"""What a window emits: Jet's WindowResult and KeyedWindowResult.

Windows are ``[start, end)`` in event-time milliseconds, aligned to the epoch. ``is_early`` is
True for a result emitted before the window closed (``set_early_results_period``). Both are
tuples (fast to build and to pickle); a keyed result is also a (key, result) entry through
``key`` and ``result``.

Between the two stages of a window aggregation a frame's partial accumulator travels as a plain
``(key, frame end, accumulator)`` tuple (:data:`FramePartial`): built in C, pickled without a
class, partitioned by :data:`partial_key` (key None when the aggregation is not keyed).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, NamedTuple, Tuple

#: One key's partial accumulator of one frame: ``(key, frame end, accumulator)``.
FramePartial = Tuple[Any, int, Any]

#: The key of a :data:`FramePartial`: the key function of the edge into the second stage.
partial_key = itemgetter(0)


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
