"""Logging of the ``jet`` command, and of the members ``jet run`` starts.

``jet run`` prints a failed job's error itself, once, with the user's frames first. Its members
write to the same terminal, so they log each error in one line, without the traceback; a
member started any other way (Kubernetes, ``jet.local_cluster``) logs tracebacks in full.
"""

from __future__ import annotations

import logging
import os
import sys
from contextlib import contextmanager
from typing import Iterator

#: Set by ``jet run`` for the members it starts (``JET_*`` variables are member settings).
BRIEF_MEMBER_LOG_ENV = "JETRUN_BRIEF_MEMBER_LOG"
_COORDINATOR_LOGGER = "jet.cluster.coordination.coordinator"


class OneLineErrors(logging.Filter):
    """Keeps the first line of every warning and error. Drops the coordinator's errors: they
    repeat a member's failure as the job's, which ``jet run`` reports."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if record.levelno >= logging.ERROR and record.name == _COORDINATOR_LOGGER:
            return False
        message = record.getMessage()
        if "\n" in message or record.exc_info:
            record.msg, record.args = message.split("\n", 1)[0].rstrip(":"), None
            record.exc_info = record.exc_text = None
        return True


class CurrentStderr:
    """``sys.stderr`` as it is at each write: while ``jet run``'s live table runs, rich puts a proxy
    there that prints above the table, and log lines go through it instead of drawing over it."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str) -> None:
    """Log to stderr at ``level``; in a member ``jet run`` started, errors in one line."""
    logging.basicConfig(level=getattr(logging, level.upper()), stream=CurrentStderr(),
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")
    if os.environ.get(BRIEF_MEMBER_LOG_ENV):
        for handler in logging.getLogger().handlers:
            handler.addFilter(OneLineErrors())


@contextmanager
def brief_member_logs() -> Iterator[None]:
    """Members started inside log their errors in one line (they read it from the environment
    they inherit); the environment is restored after, for a ``jet run`` invoked in-process."""
    previous = os.environ.get(BRIEF_MEMBER_LOG_ENV)
    os.environ[BRIEF_MEMBER_LOG_ENV] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(BRIEF_MEMBER_LOG_ENV, None)
        else:
            os.environ[BRIEF_MEMBER_LOG_ENV] = previous
