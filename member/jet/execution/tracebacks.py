"""Tracebacks of the user's errors with the user's frames first.

An error in a user's function is raised many frames deep inside the engine (worker loop,
tasklet, processor, chunk function). Printed the usual way the engine's frames lead; here the
frames from the first one in the user's own code on come first, under the usual header, and the
engine frames that called them follow as a block of their own.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from jet.core.chain_contract import StageContractError

if TYPE_CHECKING:
    from jet.execution.errors import JobFailedError

ENGINE_FRAMES_HEADER = "Called by the Jet engine (most recent call last):"


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {Path(__file__).resolve().parents[1],  # the jet package
            *(Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib"))}
    return tuple(os.path.join(str(directory), "") for directory in dirs)


_LIBRARY_DIRS = _library_dirs()


def is_library_file(filename: str) -> bool:
    """Whether a frame's file belongs to Jet, the standard library or an installed package."""
    if filename.startswith("<"):  # <frozen runpy>, <string>
        return True
    return os.path.realpath(filename).startswith(_LIBRARY_DIRS)


def split_user_frames(error: BaseException) -> tuple[traceback.StackSummary, traceback.StackSummary]:
    """(callers, user frames) of ``error``'s traceback: the user frames start at the first frame
    in the user's code and run to where the error was raised; empty when no frame is the user's."""
    stack = traceback.extract_tb(error.__traceback__)
    for index, frame in enumerate(stack):
        if not is_library_file(frame.filename):
            return (traceback.StackSummary.from_list(stack[:index]),
                    traceback.StackSummary.from_list(stack[index:]))
    return stack, traceback.StackSummary.from_list([])


def format_user_first(error: BaseException) -> str:
    """The traceback of ``error`` with the user's frames first, then the engine frames that called
    them; the usual format when no frame is in the user's code. A broken stage contract is its
    message alone: it names the stage and the function, and every frame is the engine's."""
    if isinstance(error, StageContractError):
        return "".join(traceback.format_exception_only(error))
    callers, user = split_user_frames(error)
    if not user:
        return "".join(traceback.format_exception(error))
    exception = traceback.TracebackException.from_exception(error)
    chained = ""
    if exception.__cause__ is not None or (exception.__context__ is not None
                                           and not exception.__suppress_context__):
        # The causes as Python prints them; only the error the job failed with is reordered.
        full = list(exception.format())
        own = list(exception.format(chain=False))
        chained = "".join(full[:len(full) - len(own)])
    parts = [chained, "Traceback (most recent call last):\n", *user.format(),
             *exception.format_exception_only()]
    if callers:
        parts += ["\n", ENGINE_FRAMES_HEADER, "\n", *callers.format()]
    return "".join(parts)


def failure_report(failure: "JobFailedError", engine_frames: bool = False) -> str:
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
