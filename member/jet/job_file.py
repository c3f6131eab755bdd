"""Loading the job a file defines: a Pipeline (or a core DAG), possibly built from arguments."""

from __future__ import annotations

import runpy
from typing import Any

from jet.core.dag import DAG
from jet.pipeline.pipeline import Pipeline


class JobFileError(ValueError):
    """The job file is missing or does not define a usable job; the message says which."""


def load_job(path: str, args: tuple[str, ...] = (), entrypoint: str | None = None) -> Pipeline | DAG:
    """Run the file and return the job it defines.

    The file defines ``pipeline`` (a Pipeline, or a function taking the extra arguments and
    returning one) or ``dag`` (the same for a core DAG); ``entrypoint`` picks another name.
    """
    try:
        namespace = runpy.run_path(path, run_name="__jet_job__")
    except FileNotFoundError:
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
    """The DAG to submit: a Pipeline is checked (sources and sinks opened) and planned."""
    if isinstance(job, Pipeline):
        job.preflight()
        return job.to_dag(default_local_parallelism)
    job.validate()
    return job
