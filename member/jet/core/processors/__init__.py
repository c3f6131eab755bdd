"""Ready-made processors: transforms, aggregations, sources, sinks, watermarks, windows, state.

Each factory returns a processor *supplier* (a zero-argument callable), ready for
``dag.new_vertex(name, supplier)``. Transforms work on whole chunks: a fused chain of maps,
filters and flat-maps is one pipeline of C-level iterators over the chunk, so no Python call
is spent per item beyond the user's own function.
"""

from jet.core.processors.aggregation import (AccumulateByKeyP, AccumulateP, AggregateByKeyP, CombineByKeyP,
                                             CombineP, accumulate_by_key_p, accumulate_p, aggregate_by_key_p,
                                             aggregate_p, combine_by_key_p, combine_p)
from jet.core.processors.base import ChunkEmittingProcessor, ChunkFn, Supplier
from jet.core.processors.batches import BatchFunction, batch_chain_p, compile_batch_chain, map_batches_p
from jet.core.processors.insert_watermarks import InsertWatermarksP, insert_watermarks_p
from jet.core.processors.session_window import SessionWindowP, aggregate_to_session_window_p
from jet.core.processors.sinks import ListSinkP, LoggerSinkP, NoopP, list_sink_p, logger_sink_p, noop_p
from jet.core.processors.sources import BlockSourceP, ItemsSourceP, items_source_p
from jet.core.processors.stateful import TransformStatefulP, transform_stateful_p
from jet.core.processors.streaming import StreamingProcessor
from jet.core.processors.transform import (TransformP, compile_chain, filter_p, flat_map_p, fused_p,
                                           map_p)
from jet.core.processors.windows import (SlidingWindowP, accumulate_by_frame_p,
                                         aggregate_to_sliding_window_p, combine_to_sliding_window_p)

__all__ = [
    "AccumulateByKeyP", "AccumulateP", "AggregateByKeyP", "BatchFunction", "BlockSourceP",
    "ChunkEmittingProcessor", "ChunkFn", "CombineByKeyP", "CombineP", "InsertWatermarksP",
    "ItemsSourceP", "ListSinkP", "LoggerSinkP", "NoopP", "SessionWindowP", "SlidingWindowP",
    "StreamingProcessor", "Supplier", "TransformP", "TransformStatefulP", "accumulate_by_frame_p",
    "accumulate_by_key_p", "accumulate_p", "aggregate_by_key_p", "aggregate_p",
    "aggregate_to_session_window_p", "aggregate_to_sliding_window_p", "batch_chain_p",
    "combine_by_key_p", "combine_p", "combine_to_sliding_window_p", "compile_batch_chain",
    "compile_chain", "filter_p", "flat_map_p", "fused_p", "insert_watermarks_p", "items_source_p",
    "list_sink_p", "logger_sink_p", "map_batches_p", "map_p", "noop_p", "transform_stateful_p",
]
