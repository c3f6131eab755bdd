"""Key functions the engine recognises and runs without a Python call per item."""

from __future__ import annotations

import operator
from typing import Any


def whole_item(item: Any) -> Any:
    """The item is its own key (Jet's ``wholeItem()``); grouping by it skips the call."""
    return item


#: The key of a (key, value) entry, as the second stage of an aggregation reads it.
entry_key = operator.itemgetter(0)


def _identity_code(x):  # noqa: ANN001, ANN202 - a reference for is_identity
    return x


def as_key_fn(fn: Any) -> Any:
    """``whole_item`` when ``fn`` is an identity function (``lambda w: w``), else ``fn``.

    The engine skips the per-item call for ``whole_item``; recognising the identity lambda
    users write gives them that for free.
    """
    code = getattr(fn, "__code__", None)
    if (code is not None and code.co_code == _identity_code.__code__.co_code
            and code.co_argcount == 1 and not getattr(fn, "__closure__", None)
            and not getattr(fn, "__defaults__", None) and not code.co_kwonlyargcount):
        return whole_item
    return fn
