"""Loading the job a file defines: a Pipeline (or a core DAG), possibly built from arguments."""

from __future__ import annotations

import os
import runpy
import traceback
from typing import TYPE_CHECKING, Any

from jet.core.dag import DAG
from jet.execution.tracebacks import split_user_frames

if TYPE_CHECKING:
    from jet.pipeline.pipeline import Pipeline


class JobFileError(ValueError):
    """The job file is missing or does not define a usable job; the message says which."""


def check_job_file(path: str) -> None:
    """The checks that cost nothing, made before anything starts: the file exists and compiles."""
    try:
        with open(path, "rb") as file:
            source = file.read()
    except FileNotFoundError:
        raise JobFileError(f"job file {path!r} does not exist") from None
    except OSError as error:
        raise JobFileError(f"cannot read job file {path!r}: {error.strerror or error}") from None
    try:
        compile(source, path, "exec")
    except (SyntaxError, ValueError) as error:
        raise JobFileError(f"job file {path} does not compile:\n"
                           + "".join(traceback.format_exception_only(error)).rstrip("\n")) from None


def load_job_dag(path: str, args: tuple[str, ...], entrypoint: str | None,
                 default_local_parallelism: int) -> DAG:
    """The checked, planned DAG of the job the file defines; anything that stops it (the file
    raises, defines no job, names a missing input, a bad stage) is a :class:`JobFileError` with
    one message: the error, led by the user's frames when the user's code raised it."""
    try:
        return to_dag(load_job(path, args, entrypoint), default_local_parallelism)
    except JobFileError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's code or a refused pipeline: say which
        raise JobFileError(_rejection(path, error)) from error


def _rejection(path: str, error: BaseException) -> str:
    """The error, after the frames of the user's code that led to it (no engine frames)."""
    _, user = split_user_frames(error)
    text = "".join(traceback.format_exception_only(error)).rstrip("\n")
    if not user:
        return text
    return (f"{path} raised an error while defining its job:\nTraceback (most recent call last):\n"
            + "".join(user.format()) + text)


def load_job(path: str, args: tuple[str, ...] = (), entrypoint: str | None = None) -> Pipeline | DAG:
    """Run the file and return the job it defines.

    The file defines ``pipeline`` (a Pipeline, or a function taking the extra arguments and
    returning one) or ``dag`` (the same for a core DAG); ``entrypoint`` picks another name.
    """
    from jet.pipeline.pipeline import Pipeline  # here, not at the top: `jet member` starts without it

    try:
        namespace = runpy.run_path(path, run_name="__jet_job__")
    except FileNotFoundError:
        if os.path.exists(path):
            raise  # the file's own code opened a missing file
        raise JobFileError(f"job file {path!r} does not exist") from None
    names = [entrypoint] if entrypoint else ["pipeline", "dag"]
    for name in names:
        definition: Any = namespace.get(name)
        if definition is None:
            continue
        job = definition(*args) if callable(definition) and not isinstance(definition, (Pipeline, DAG)) \
            else definition
        if not isinstance(job, (Pipeline, DAG)):
            raise JobFileError(f"{name!r} in {path} gave {type(job).__name__}, expected a jet.Pipeline"
                               " or a jet.core.DAG")
        return job
    wanted = " or ".join(repr(n) for n in names)
    raise JobFileError(f"{path} defines no {wanted} (a Pipeline, or a function returning one)")


def to_dag(job: Pipeline | DAG, default_local_parallelism: int) -> DAG:
    """The DAG to submit: a Pipeline is checked (sources and sinks opened) and planned (and
    marked ``is_streaming`` by the planner when it reads a stream)."""
    from jet.pipeline.pipeline import Pipeline

    if isinstance(job, Pipeline):
        job.preflight()
        return job.to_dag(default_local_parallelism)
    job.validate()
    return job
