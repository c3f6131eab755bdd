"""How a query is split over the source processors of the cluster: by ranges of one column.

Processor g of N reads the rows whose column value is in ``[bound(g), bound(g + 1))``, where
``bound(k) = min + (max - min) * k / N`` (integer division for integers, dates and times); the
last processor's range includes ``max`` and the first one also reads the rows whose value is NULL,
so every row is read by exactly one processor.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any, NamedTuple


class ValueRange(NamedTuple):
    """The rows ``low <= value < high`` (``high`` included when ``includes_high``), and the NULLs
    when ``includes_nulls``; ``low`` is None for a range with no values (an empty table)."""

    low: Any
    high: Any
    includes_high: bool
    includes_nulls: bool


def processor_range(minimum: Any, maximum: Any, index: int, count: int) -> ValueRange:
    """The range of processor ``index`` of ``count`` over ``[minimum, maximum]``."""
    first, last = index == 0, index == count - 1
    if minimum is None:  # no non-NULL value at all
        return ValueRange(None, None, False, first)
    return ValueRange(_bound(minimum, maximum, index, count), _bound(minimum, maximum, index + 1, count),
                      last, first)


def _bound(minimum: Any, maximum: Any, k: int, count: int) -> Any:
    if k == count:
        return maximum
    if isinstance(minimum, bool):
        raise TypeError("a boolean column cannot split a query into ranges")
    if isinstance(minimum, (int, datetime.date)):  # a datetime is a date; their differences are timedeltas
        return minimum + (maximum - minimum) * k // count
    if isinstance(minimum, (float, Decimal)):
        return minimum + (maximum - minimum) * k / count
    raise TypeError(f"a column of {type(minimum).__name__} values cannot split a query into ranges "
                    "(integers, numerics, dates and timestamps can)")
