"""Jet for Python: low-latency DAG processing, run on a laptop or on Kubernetes."""

import os
from importlib import import_module
from typing import TYPE_CHECKING, Any

# gRPC's fork support (on by default in grpcio's build) runs handlers at every fork(); with a
# thread inside a gRPC call they are skipped half-way and the child can abort before its exec:
# PySpark's JVM launch (a fork with preexec_fn) failed so under `jet run`. Jet forks only to exec,
# or before gRPC starts (the fork server), so it needs none of it. Read when gRPC starts.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

if TYPE_CHECKING:
    from jet.connectors import SimpleEvent, SinkBuilder, Sinks, SourceBuilder, Sources
    from jet.core import DAG, AggregateOperation, Edge, Processor, Vertex
    from jet.core.service_factory import ServiceFactories, ServiceFactory
    from jet.core.window_results import KeyedWindowResult, WindowResult
    from jet.pipeline import (AggregateOperations, JoinClause, Pipeline, PipelineDefinitionError, StreamSourceStage,
                              StreamStage, WindowDefinition)

# The public names are imported on first use: a member process (``import jet.cluster.member_main``)
# does not pay for the connectors and the Pipeline API at start-up.
_LAZY = {
    **dict.fromkeys(["SimpleEvent", "SinkBuilder", "Sinks", "SourceBuilder", "Sources"], "jet.connectors"),
    **dict.fromkeys(["DAG", "AggregateOperation", "Edge", "Processor", "Vertex"], "jet.core"),
    **dict.fromkeys(["KeyedWindowResult", "WindowResult"], "jet.core.window_results"),
    **dict.fromkeys(["ServiceFactories", "ServiceFactory"], "jet.core.service_factory"),
    **dict.fromkeys(["AggregateOperations", "JoinClause", "Pipeline", "PipelineDefinitionError", "StreamSourceStage",
                     "StreamStage", "WindowDefinition"], "jet.pipeline"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jet' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def connect(addresses, token=None, tls=None):
    """A client of the cluster whose member 0 is ``addresses[0]`` (see :func:`jet.cluster.client.connect`)."""
    from jet.cluster.client import connect as _connect
    return _connect(addresses, token, tls)


def local_cluster(members: int = 2, threads=None, **settings):
    """N member processes on this machine, Spark stages run in a local SparkSession
    (see :func:`jet.local.local_cluster`)."""
    from jet.local import local_cluster as _local_cluster
    return _local_cluster(members, threads, **settings)


__all__ = ["AggregateOperation", "AggregateOperations", "DAG", "Edge", "JoinClause", "KeyedWindowResult", "Pipeline",
           "PipelineDefinitionError", "Processor", "ServiceFactories", "ServiceFactory", "SimpleEvent", "SinkBuilder",
           "Sinks", "SourceBuilder", "Sources",
           "StreamSourceStage", "StreamStage", "Vertex", "WindowDefinition", "WindowResult", "connect",
           "local_cluster"]
__version__ = "0.1.0"
