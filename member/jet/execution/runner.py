"""Run a DAG on one member, in this process."""

from __future__ import annotations

import os

from jet.core.dag import DAG
from jet.core.edge import EdgeConfig
from jet.execution.errors import JobTimeoutError
from jet.execution.plan import ExecutionPlan
from jet.execution.service import TaskletExecutionService


def default_cooperative_threads() -> int:
    """Jet's default: one cooperative thread per core."""
    return os.cpu_count() or 1


def execute(dag: DAG, cooperative_threads: int | None = None, timeout: float | None = None,
            edge_defaults: EdgeConfig | None = None, job_name: str = "job",
            service: TaskletExecutionService | None = None) -> None:
    """Run ``dag`` to completion on one member in this process.

    Raises DagValidationError before anything runs when the DAG is malformed, JobFailedError
    (with the user's traceback, and the original error as ``__cause__``) when a processor
    fails, and JobTimeoutError naming the tasklets still running when ``timeout`` seconds
    pass; the job is cancelled then, so nothing keeps running.
    """
    threads = cooperative_threads or (service.cooperative_threads if service
                                      else default_cooperative_threads())
    plan = ExecutionPlan(dag, cooperative_threads=threads, edge_defaults=edge_defaults,
                         job_id=job_name)
    tasklets = plan.build()
    own_service = service is None
    if own_service:
        service = TaskletExecutionService(threads)
    try:
        future = service.submit(tasklets, job_name)
        try:
            future.result(timeout)
        except JobTimeoutError:
            future.cancel("cancelled after its timeout")
            future.wait(5.0)
            raise
    finally:
        if own_service:
            service.shutdown()
