"""Running one job on one member: queues, edge streams, tasklets, the execution service."""

from jet.execution.errors import JobCancelledError, JobFailedError, JobTimeoutError
from jet.execution.runner import default_cooperative_threads, execute
from jet.execution.service import TaskletExecutionService

__all__ = ["JobCancelledError", "JobFailedError", "JobTimeoutError", "TaskletExecutionService",
           "default_cooperative_threads", "execute"]
