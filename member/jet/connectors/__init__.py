"""Sources and sinks: in-memory, files, logger, streams, builders, and (later) Spark."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jet.connectors.sink_builder import SinkBuilder
    from jet.connectors.sinks import Sinks
    from jet.connectors.source_builder import SourceBuilder
    from jet.connectors.sources import Sources
    from jet.connectors.stream_sources import SimpleEvent
    from jet.pipeline.source_sink import Sink, Source, StreamSource

# Imported on first use: a member imports jet.connectors.spark.hub at start, and with it this package.
_LAZY = {"Sink": "jet.pipeline.source_sink", "Source": "jet.pipeline.source_sink", "StreamSource": "jet.pipeline.source_sink",
         "SinkBuilder": "jet.connectors.sink_builder", "Sinks": "jet.connectors.sinks",
         "SourceBuilder": "jet.connectors.source_builder", "Sources": "jet.connectors.sources",
         "SimpleEvent": "jet.connectors.stream_sources"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jet.connectors' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

__all__ = ["SimpleEvent", "Sink", "SinkBuilder", "Sinks", "Source", "SourceBuilder", "Sources", "StreamSource"]
