"""What map, filter and flat_map functions must do, and which one did not.

A chain of stateless steps runs as C-level iterators over a chunk (``processors.transform.compile_chain``),
so a function that breaks its contract (a flat_map function returning a number, a filter
function returning something without a truth value, a function taking two arguments) makes the
iterator fail with a bare ``TypeError: 'int' object is not iterable`` that names neither the
stage nor the function. When a chain fails, :meth:`ChainContract.broken_by` finds out, on the
failure path only, which step broke its contract and says what the function must do.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

MUST = {
    "map": "take one argument, the item, and return the item to emit",
    "filter": "take one argument, the item, and return a value usable as true or false",
    "flat_map": "take one argument, the item, and return an iterable of the items to emit"
                " (a list, a tuple or a generator)",
}
_CHAIN_MODULE = "jet.core.processors.transform"
_ITEM_REPR_CHARS = 80


class StageContractError(TypeError):
    """A user's function broke the contract of its stage; the message names the stage, the
    function (name, file, line), what it must do and what it did."""


def describe_function(fn: Callable[..., Any]) -> str:
    """``name (file, line N)`` of a Python function, else its repr."""
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{name} ({code.co_filename}, line {code.co_firstlineno})" if code is not None else name


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _ITEM_REPR_CHARS else text[:_ITEM_REPR_CHARS - 3] + "..."


def _accepts_one_argument(fn: Callable[..., Any]) -> tuple[bool, str]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: cannot tell
        return True, ""
    try:
        signature.bind(object())
    except TypeError:
        return False, str(signature)
    return True, ""


def _raised_by_chain(error: BaseException) -> bool:
    """Whether the innermost frame of ``error`` is the chain's own (the iterators failed on what
    a user function gave them, or could not call it), not a frame inside a user function."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__") == _CHAIN_MODULE


class ChainContract:
    """The steps of one chain with their stage names, to explain a failure of the chain."""

    def __init__(self, steps: Sequence[tuple[str, Callable[[Any], Any]]],
                 stage_names: Sequence[str] | None = None) -> None:
        self.steps = tuple(steps)
        self.stage_names = tuple(stage_names) if stage_names else tuple(kind for kind, _ in self.steps)

    def _error(self, index: int, did: str) -> StageContractError:
        kind, fn = self.steps[index]
        return StageContractError(f"stage {self.stage_names[index]!r} ({kind}): its function "
                                  f"{describe_function(fn)} must {MUST[kind]}; {did}")

    def broken_by(self, chunk: list, error: BaseException) -> StageContractError | None:
        """The contract a step broke when the chain failed with ``error`` over ``chunk``, or None
        when the error is the user function's own (raised inside it) or cannot be explained.

        Runs the chain again over the chunk, one item and one step at a time, so the functions
        before the broken one are called a second time for the items of this chunk."""
        if not _raised_by_chain(error):
            return None
        for index, (_, fn) in enumerate(self.steps):
            accepted, signature = _accepts_one_argument(fn)
            if not accepted:
                return self._error(index, f"its signature is {signature}")
        items = list(chunk)
        for index, (kind, fn) in enumerate(self.steps):
            output: list = []
            for item in items:
                try:
                    problem = self._check(kind, item, fn(item), output)
                except Exception:  # noqa: BLE001 - the function's own error: the original stands
                    return None
                if problem:
                    return self._error(index, problem)
            items = output
        return None

    @staticmethod
    def _check(kind: str, item: Any, result: Any, output: list) -> str:
        """Add what the step emits for ``item`` to ``output``; say what is wrong, if anything."""
        if kind == "map":
            output.append(result)
            return ""
        if kind == "filter":
            try:
                keep = bool(result)
            except Exception as e:  # noqa: BLE001 - e.g. an array: its truth value is ambiguous
                return (f"for item {_short_repr(item)} it returned {type(result).__name__}, whose truth "
                        f"value raised {type(e).__name__}: {e}")
            if keep:
                output.append(item)
            return ""
        try:
            iterator = iter(result)
        except TypeError:
            return (f"for item {_short_repr(item)} it returned {type(result).__name__}: "
                    f"{_short_repr(result)}, which is not iterable")
        output.extend(iterator)
        return ""
