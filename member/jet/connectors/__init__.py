"""Sources and sinks: in-memory, files, logger, streams, builders, and (later) Spark."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jet.connectors.base import Sink, Source, StreamSource
    from jet.connectors.sink_builder import SinkBuilder
    from jet.connectors.sinks import Sinks
    from jet.connectors.source_builder import SourceBuilder
    from jet.connectors.sources import Sources
    from jet.connectors.stream_sources import SimpleEvent

# Imported on first use: a member imports jet.connectors.spark.hub at start, and with it this package.
_LAZY = {"Sink": "base", "Source": "base", "StreamSource": "base", "SinkBuilder": "sink_builder", "Sinks": "sinks",
         "SourceBuilder": "source_builder", "Sources": "sources", "SimpleEvent": "stream_sources"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jet.connectors' has no attribute {name!r}")
    value = getattr(import_module(f"jet.connectors.{module}"), name)
    globals()[name] = value
    return value

__all__ = ["SimpleEvent", "Sink", "SinkBuilder", "Sinks", "Source", "SourceBuilder", "Sources", "StreamSource"]
