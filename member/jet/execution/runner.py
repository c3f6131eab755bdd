"""Run a DAG on one member, in this process."""

from __future__ import annotations

import os

from jet.core.dag import DAG
from jet.core.edge import EdgeConfig
from jet.execution.errors import JobTimeoutError
from jet.execution.job_future import ExecutionFuture
from jet.execution.plan import ExecutionPlan
from jet.execution.service import TaskletExecutionService

#: Measured (bench/README.md): under CPython's GIL a second cooperative thread in one member
#: makes word count 2-3x slower, so a member runs one and the cores are used by more members.
DEFAULT_COOPERATIVE_THREADS = 1


def default_cooperative_threads() -> int:
    """The member default: ``JET_COOPERATIVE_THREADS`` if set, else one thread (see above)."""
    value = os.environ.get("JET_COOPERATIVE_THREADS")
    if value is None:
        return DEFAULT_COOPERATIVE_THREADS
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"JET_COOPERATIVE_THREADS must be an integer >= 1, got {value!r}")
    return threads


class LocalJob:
    """A job running on one member in this process."""

    def __init__(self, plan: ExecutionPlan, future: ExecutionFuture,
                 service: TaskletExecutionService, own_service: bool) -> None:
        self.plan = plan
        self.future = future
        self._service = service
        self._own_service = own_service

    def metrics(self) -> dict[str, dict[str, int]]:
        """Items in and out per vertex so far."""
        return self.plan.vertex_metrics()

    def join(self, timeout: float | None = None) -> dict[str, list]:
        """Wait for the job and return its named results; on timeout cancel it and raise."""
        try:
            try:
                self.future.result(timeout)
            except JobTimeoutError:
                self.future.cancel("cancelled after its timeout")
                self.future.wait(5.0)
                raise
            return self.plan.results
        finally:
            if self._own_service and self.future.is_done():
                self._service.shutdown()

    def results(self) -> dict[str, list]:
        """Named results collected so far (complete once the job is done)."""
        return self.plan.results

    def result(self, name: str = "default") -> list:
        """The items ``Sinks.list(name)`` collected."""
        if name not in self.plan.results:
            raise KeyError(f"the job has no result named {name!r}; its results are"
                           f" {sorted(self.plan.results)}")
        return self.plan.results[name]

    def cancel(self) -> None:
        self.future.cancel()


def start(dag: DAG, cooperative_threads: int | None = None,
          edge_defaults: EdgeConfig | None = None, job_name: str = "job",
          service: TaskletExecutionService | None = None, metrics_enabled: bool = True) -> LocalJob:
    """Start ``dag`` on one member in this process (DagValidationError before anything runs).
    ``metrics_enabled=False`` skips the counting only metrics need (JobConfig.metrics_enabled)."""
    threads = cooperative_threads or (service.cooperative_threads if service
                                      else default_cooperative_threads())
    plan = ExecutionPlan(dag, cooperative_threads=threads, edge_defaults=edge_defaults,
                         job_id=job_name, metrics_enabled=metrics_enabled)
    tasklets = plan.build()
    own_service = service is None
    if own_service:
        service = TaskletExecutionService(threads)
    return LocalJob(plan, service.submit(tasklets, job_name), service, own_service)


def execute(dag: DAG, cooperative_threads: int | None = None, timeout: float | None = None,
            edge_defaults: EdgeConfig | None = None, job_name: str = "job",
            service: TaskletExecutionService | None = None) -> dict[str, list]:
    """Run ``dag`` to completion on one member in this process; return its named results.

    Raises DagValidationError before anything runs when the DAG is malformed, JobFailedError
    (with the user's traceback, and the original error as ``__cause__``) when a processor
    fails, and JobTimeoutError naming the tasklets still running when ``timeout`` seconds
    pass; the job is cancelled then, so nothing keeps running.
    """
    return start(dag, cooperative_threads, edge_defaults, job_name, service).join(timeout)
