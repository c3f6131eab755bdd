"""The tasklet contract: a green thread the execution service calls until it is done."""

from __future__ import annotations

import enum
from typing import Protocol


class ProgressState(enum.IntEnum):
    """What one ``call()`` achieved: bit 0 = made progress, bit 1 = done."""

    NO_PROGRESS = 0
    MADE_PROGRESS = 1
    WAS_ALREADY_DONE = 2
    DONE = 3


# Plain ints for the hot path (an enum attribute lookup per call costs more).
NO_PROGRESS = 0
MADE_PROGRESS = 1
WAS_ALREADY_DONE = 2
DONE = 3
PROGRESS_BIT = 1
DONE_BIT = 2


class Tasklet(Protocol):
    """A unit the execution service runs: cooperative ones share worker threads.

    Optional: ``wants_polling() -> bool``. A cooperative thread whose tasklets all return False
    there parks on a wake-up signal instead of polling them every millisecond; such a tasklet
    promises that whatever gives it work calls ``jet.execution.backoff.wake_parked_workers()``.
    Tasklets without the method are polled.
    """

    name: str
    is_cooperative: bool

    def init(self) -> None:
        """Called once, on the thread that will call it, before the first ``call``."""

    def call(self) -> int:
        """Do a small amount of work; return a ProgressState value."""

    def close(self) -> None:
        """Called once when the job ends, however it ends."""
