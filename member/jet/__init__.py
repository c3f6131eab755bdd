"""Jet for Python: low-latency DAG processing, run on a laptop or on Kubernetes."""

from jet.connectors import Sinks, Sources
from jet.core import DAG, AggregateOperation, Edge, Processor, Vertex
from jet.pipeline import AggregateOperations, Pipeline

__all__ = ["AggregateOperation", "AggregateOperations", "DAG", "Edge", "Pipeline", "Processor",
           "Sinks", "Sources", "Vertex"]
__version__ = "0.1.0"
