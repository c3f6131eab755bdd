"""The public model of Jet: DAG, vertices, edges, processors, partitioning, aggregation."""

from jet.core.aggregate import AggregateOperation
from jet.core.dag import DAG, LOCAL_PARALLELISM_USE_DEFAULT, DagValidationError, Vertex
from jet.core.edge import Edge, EdgeConfig, RoutingPolicy
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.partitioner import (DEFAULT_PARTITIONER, HASH_PARTITIONER, PARTITION_COUNT,
                                  HashPartitioner, MurmurHashPartitioner, Partitioner)
from jet.core.processor import AbstractProcessor, Context, Processor

__all__ = [
    "AbstractProcessor", "AggregateOperation", "Context", "DAG", "DEFAULT_PARTITIONER",
    "DagValidationError", "Edge", "EdgeConfig", "HASH_PARTITIONER", "HashPartitioner", "Inbox",
    "LOCAL_PARALLELISM_USE_DEFAULT", "MurmurHashPartitioner", "Outbox", "PARTITION_COUNT",
    "Partitioner", "Processor", "RoutingPolicy", "Vertex",
]
