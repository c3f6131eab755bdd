"""Source and sink descriptors: what a pipeline stage needs to become a vertex."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from jet.core.processor import Processor


@dataclass(frozen=True)
class Source:
    """A batch source: a name for its vertex, a processor supplier and how parallel it is.

    ``preflight`` runs when the job is submitted and raises a clear error (naming the path
    or option) when the source cannot be opened, so a bad source fails before anything runs.
    """

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int = 1
    preflight: Callable[[], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Sink:
    """A sink: a name for its vertex, a processor supplier and how parallel it is."""

    name: str
    supplier: Callable[[], Processor]
    local_parallelism: int = 1
    preflight: Callable[[], None] | None = field(default=None, compare=False)
