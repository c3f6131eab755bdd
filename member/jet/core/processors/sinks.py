"""Sinks inside the engine: a list in this process, the logger, and nothing at all."""

from __future__ import annotations

import logging
from typing import Any, Callable

from jet.core.inbox import Inbox
from jet.core.processor import Processor
from jet.core.processors.base import Supplier


class ListSinkP(Processor):
    """Appends every item it receives to a list in this process."""

    def __init__(self, target: list) -> None:
        self._target = target

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._target.extend(inbox.take_chunk())


def list_sink_p(target_list: list) -> Supplier:
    """A sink that appends every item to ``target_list`` (of this process)."""
    if not isinstance(target_list, list):
        raise TypeError(f"list_sink_p needs a list, got {type(target_list).__name__}")
    return lambda: ListSinkP(target_list)


class LoggerSinkP(Processor):
    """Logs every item at INFO on the processor's logger.

    Not exactly-once under any guarantee: a logged line cannot be taken back, so the items a
    restarted job replays from its last snapshot are logged again."""

    def __init__(self, format_fn: Callable[[Any], str]) -> None:
        self._format = format_fn

    def process(self, ordinal: int, inbox: Inbox) -> None:
        logger = self.context.logger
        if logger.isEnabledFor(logging.INFO):
            for item in inbox.take_chunk():
                logger.info("%s", self._format(item))
        else:
            inbox.clear()


def logger_sink_p(format_fn: Callable[[Any], str] = str) -> Supplier:
    """A sink that logs each item (formatted by ``format_fn``) at INFO level."""
    return lambda: LoggerSinkP(format_fn)


class NoopP(Processor):
    """Consumes everything and emits nothing."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()


def noop_p() -> Supplier:
    """A processor that swallows its input."""
    return NoopP
