"""Sources and sinks: in-memory, files, logger, streams, builders, and (later) Spark."""

from jet.connectors.base import Sink, Source, StreamSource
from jet.connectors.sink_builder import SinkBuilder
from jet.connectors.sinks import Sinks
from jet.connectors.source_builder import SourceBuilder
from jet.connectors.sources import Sources
from jet.connectors.stream_sources import SimpleEvent

__all__ = ["SimpleEvent", "Sink", "SinkBuilder", "Sinks", "Source", "SourceBuilder", "Sources", "StreamSource"]
