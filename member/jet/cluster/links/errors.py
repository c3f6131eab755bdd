"""The engine's own connection failures, told apart from a job's.

A broken or missing link to another member raises :class:`LinkError`. It is a
``ConnectionError``, so code that catches those still does; but a job's function that raises a
plain ``ConnectionError`` (a refused socket, a service that went away) is the job's failure, not
a lost member's, and the coordinator never restarts a job for it (see
:class:`jet.cluster.executions.outcome.FailureKind`).
"""


class LinkError(ConnectionError):
    """This member's link to another member is broken, closed or was never there."""


class NotFoundError(KeyError):
    """A request named something this member does not have (a job, an execution, an
    observable): answered ``NOT_FOUND``, not an internal error."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else ""


class RetryLaterError(Exception):
    """A request this member cannot answer yet but will soon (member 0 reading its job records
    after a restart): answered ``UNAVAILABLE``, which clients retry."""
