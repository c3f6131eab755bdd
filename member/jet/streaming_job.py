"""Whether a job is a stream: it reads an unbounded source and runs until it is cancelled.

The planner marks the DAG of a pipeline that reads a ``StreamSource`` with
``dag.is_streaming = True``; a hand-written DAG whose source never ends sets it itself. A DAG
without the mark is a stream when the pipeline it was planned from reads a ``StreamSource``
(:func:`mark_streaming` sets the mark then, so the members see it in the DAG they get).
"""

from __future__ import annotations

from typing import Any

from jet.connectors.base import StreamSource
from jet.core.dag import DAG
from jet.execution.progress_log import STREAMING_ATTRIBUTE, is_streaming

__all__ = ["is_streaming", "mark_streaming", "reads_a_stream"]


def reads_a_stream(job: Any) -> bool:
    """Whether the pipeline ``job`` (or a DAG: False) reads from a ``StreamSource``."""
    transforms = getattr(job, "transforms", None)
    if transforms is None or isinstance(job, DAG):
        return False
    return any(isinstance(getattr(transform, "connector", None), StreamSource) for transform in transforms)


def mark_streaming(job: Any, dag: DAG) -> DAG:
    """``dag`` (planned from ``job``), marked as a stream when ``job`` reads one."""
    if not is_streaming(dag) and reads_a_stream(job):
        setattr(dag, STREAMING_ATTRIBUTE, True)
    return dag
