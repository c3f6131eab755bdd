"""Jet for Python: low-latency DAG processing, run on a laptop or on Kubernetes."""

from jet.core import DAG, Edge, Processor, Vertex

__all__ = ["DAG", "Edge", "Processor", "Vertex"]
__version__ = "0.1.0"
