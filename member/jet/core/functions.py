"""Key and value functions the engine recognises and runs without a Python call per item."""

from __future__ import annotations

import dis
import inspect
import operator
import weakref
from typing import Any, Callable, Iterable


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


_SKIPPED_OPS = frozenset({"RESUME", "NOP", "CACHE", "EXTENDED_ARG"})
_STAR_ARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_UNKNOWN = object()
_twins: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def _getter_form(fn: Any) -> tuple[str, Any] | None:
    """``("item", k)`` for ``lambda x: x[k]`` (``k`` a constant int or str), ``("attr", name)``
    for ``lambda x: x.name``; None for anything else."""
    code = getattr(fn, "__code__", None)
    if (code is None or code.co_argcount != 1 or code.co_kwonlyargcount or code.co_flags & _STAR_ARGS
            or getattr(fn, "__closure__", None)):
        return None
    ops = [(op.opname, op.argval) for op in dis.get_instructions(code) if op.opname not in _SKIPPED_OPS]
    argument = code.co_varnames[0]
    if len(ops) == 4 and ops[0] == ("LOAD_FAST", argument) and ops[1][0] == "LOAD_CONST" \
            and ops[2][0] == "BINARY_SUBSCR" and ops[3][0] == "RETURN_VALUE" \
            and type(ops[1][1]) in (int, str):
        return "item", ops[1][1]
    if len(ops) == 3 and ops[0] == ("LOAD_FAST", argument) and ops[1][0] == "LOAD_ATTR" \
            and ops[2][0] == "RETURN_VALUE":
        return "attr", ops[1][1]
    return None


def getter_twin(fn: Any) -> Callable[[Any], Any] | None:
    """The C callable that computes what ``fn`` does when ``fn`` is a plain getter:
    ``operator.itemgetter(k)`` for ``lambda x: x[k]`` (``k`` a constant int or str),
    ``operator.attrgetter(name)`` for ``lambda x: x.name``; None for anything else."""
    form = _getter_form(fn)
    if form is None:
        return None
    kind, what = form
    return operator.itemgetter(what) if kind == "item" else operator.attrgetter(what)


def getter_item(fn: Any) -> int | str | None:
    """``k`` when ``fn`` is ``lambda x: x[k]`` with ``k`` a constant int or str, else None: the
    column a row's getter reads, for stages that can work on whole columns."""
    form = _getter_form(fn)
    return form[1] if form is not None and form[0] == "item" else None


def map_each(fn: Callable[[Any], Any], items: list) -> Iterable[Any]:
    """``map(fn, items)``, but for a plain getter (:func:`getter_twin`) the results of its C twin,
    about 20 ns an item faster. A twin that raises is not trusted with the error: ``fn`` itself
    runs over the items again, so the error, and the traceback's frame, are the user's."""
    try:
        twin = _twins.get(fn, _UNKNOWN)
    except TypeError:  # not weakly referenceable: a builtin, already C
        return map(fn, items)
    if twin is _UNKNOWN:
        twin = _twins[fn] = getter_twin(fn)
    if twin is None:
        return map(fn, items)
    try:
        return list(map(twin, items))
    except Exception:  # noqa: BLE001 - raised again below, from the user's function
        pass
    return list(map(fn, items))  # outside the handler: the user's error has no engine context
