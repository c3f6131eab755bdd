"""The error of a pipeline that cannot run, and the checks every stage method shares."""

from __future__ import annotations

from typing import Any

from jet.core.aggregate import AggregateOperation


class PipelineDefinitionError(ValueError):
    """The pipeline is malformed; the message names the stage at fault."""


def require_callable(fn: Any, stage: str, argument: str) -> None:
    """Refuse a non-callable ``fn`` given as ``argument`` of ``stage``."""
    if not callable(fn):
        raise PipelineDefinitionError(
            f"stage {stage!r}: {argument} must be callable, got {type(fn).__name__} {fn!r}")


def require_operation(operation: Any, stage: str) -> None:
    """Refuse anything but an AggregateOperation for ``stage``."""
    if not isinstance(operation, AggregateOperation):
        raise PipelineDefinitionError(
            f"stage {stage!r}: expected an AggregateOperation (see jet.AggregateOperations),"
            f" got {type(operation).__name__} {operation!r}")
