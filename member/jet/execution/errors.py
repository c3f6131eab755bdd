"""Errors a job can end with."""

from __future__ import annotations


class JobFailedError(RuntimeError):
    """A job failed; ``__cause__`` is the original error, the message holds its traceback.

    ``tasklet`` names where it happened and ``traceback_text`` is the formatted traceback,
    which survives being sent between processes.
    """

    def __init__(self, message: str, tasklet: str = "", traceback_text: str = "") -> None:
        super().__init__(message)
        self.tasklet = tasklet
        self.traceback_text = traceback_text


class JobCancelledError(JobFailedError):
    """The job was cancelled (in Jet a cancelled job ends FAILED with this cause)."""


class MemberLostError(JobFailedError):
    """The execution stopped because a member it ran on was lost; the coordinator restarts the
    job (from its last snapshot) or fails it, and says so."""


class JobTimeoutError(TimeoutError):
    """The job did not finish in time; ``running`` names the tasklets still running."""

    def __init__(self, message: str, running: list[str]) -> None:
        super().__init__(message)
        self.running = running
