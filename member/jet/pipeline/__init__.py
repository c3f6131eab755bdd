"""The Pipeline API and its planner (Pipeline -> core DAG)."""

from jet.pipeline.aggregate_operations import AggregateOperations
from jet.pipeline.co_group import JoinClause
from jet.pipeline.errors import PipelineDefinitionError
from jet.pipeline.pipeline import Pipeline
from jet.pipeline.stages import (BatchStage, GeneralStage, SinkStage, StageWithKey, StageWithKeyAndWindow,
                                 StageWithWindow)
from jet.pipeline.stream_stages import StreamSourceStage, StreamStage, StreamStageWithKey
from jet.pipeline.window_definition import WindowDefinition

__all__ = ["AggregateOperations", "BatchStage", "GeneralStage", "JoinClause", "Pipeline", "PipelineDefinitionError",
           "SinkStage", "StageWithKey", "StageWithKeyAndWindow", "StageWithWindow", "StreamSourceStage",
           "StreamStage", "StreamStageWithKey", "WindowDefinition"]
