"""The Pipeline API and its planner (Pipeline -> core DAG)."""

from jet.pipeline.aggregate_operations import AggregateOperations
from jet.pipeline.pipeline import Pipeline
from jet.pipeline.stages import BatchStage, PipelineDefinitionError, SinkStage, StageWithKey

__all__ = ["AggregateOperations", "BatchStage", "Pipeline", "PipelineDefinitionError", "SinkStage",
           "StageWithKey"]
