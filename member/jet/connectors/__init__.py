"""Sources and sinks: in-memory, files, logger, and (later) Spark."""

from jet.connectors.base import Sink, Source
from jet.connectors.sinks import Sinks
from jet.connectors.sources import Sources

__all__ = ["Sink", "Sinks", "Source", "Sources"]
