"""The checks of stream stages that ``Pipeline.validate`` runs at submission.

Each check names the stage at fault and says what to do instead. They run on the recorded
transforms, so the error comes when the job is submitted whatever order the stages were
defined in.
"""

from __future__ import annotations

from jet.pipeline.co_group import CO_GROUP_KINDS, check_co_group_rules
from jet.pipeline.errors import PipelineDefinitionError
from jet.pipeline.transforms import STATEFUL_KINDS, Transform

_TIMESTAMP_HINT = ("give the stream timestamps (with_timestamps, with_native_timestamps or"
                   " with_ingestion_timestamps on its source, or add_timestamps)")


def check_stream_rules(transform: Transform) -> None:
    """Raise PipelineDefinitionError when ``transform`` breaks a rule of streams and batches."""
    kind, name = transform.kind, transform.name
    upstream = transform.inputs[0].transform if transform.inputs else None
    if kind == "source" and transform.stream and not transform.timestamps_chosen:
        _fail(name, "a stream source stage needs with_timestamps(fn, allowed_lag_ms),"
                    " with_native_timestamps(allowed_lag_ms), with_ingestion_timestamps() or"
                    " without_timestamps() before other stages can use it")
    elif kind in ("aggregate", "group_aggregate") and upstream.stream:
        _fail(name, f"aggregate() without a window is a batch operation, and {upstream.name!r} is"
                    " a stream: add window(WindowDefinition...) before aggregate()")
    elif kind == "window_aggregate":
        _check_window(transform, upstream)
    elif kind in STATEFUL_KINDS:
        _check_ttl(transform, upstream)
    elif kind == "hash_join" and transform.inputs[1].transform.stream:
        _fail(name, f"the lookup side of a hash join must be a batch stage, and"
                    f" {transform.inputs[1].transform.name!r} is a stream")
    elif kind == "merge" and upstream.stream != transform.inputs[1].transform.stream:
        stream, batch = sorted((i.transform for i in transform.inputs), key=lambda t: not t.stream)
        _fail(name, f"cannot merge the stream {stream.name!r} with the batch stage {batch.name!r}")
    elif kind in CO_GROUP_KINDS:
        check_co_group_rules(transform)
    elif kind == "add_timestamps" and upstream.timestamped:
        _fail(name, f"{upstream.name!r} already has timestamps; add_timestamps is for a stream"
                    " without them")


def _check_window(transform: Transform, upstream: Transform) -> None:
    if not upstream.stream:
        _fail(transform.name, f"window() needs a stream stage, and {upstream.name!r} is a batch"
                              " stage (aggregate it without a window)")
    if not upstream.timestamped:
        _fail(transform.name, f"a window needs event time, and the stream {upstream.name!r} has no"
                              f" timestamps: {_TIMESTAMP_HINT}")
    for problem in transform.window.problems():
        _fail(transform.name, f"{transform.window!r}: {problem}")
    if transform.operation.combine is None and not getattr(transform.window, "is_tumbling", False):
        _fail(transform.name, f"{transform.window!r} merges partial results, and the aggregate"
                              f" operation {transform.operation.name!r} has no combine function")


def _check_ttl(transform: Transform, upstream: Transform) -> None:
    ttl_ms = transform.ttl_ms
    if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms < 0:
        _fail(transform.name, f"ttl_ms must be an int >= 0 (0: keep the state forever), got {ttl_ms!r}")
    if ttl_ms > 0 and not upstream.timestamped:
        _fail(transform.name, f"a TTL of {ttl_ms} ms is measured in event time, and"
                              f" {upstream.name!r} has no timestamps: {_TIMESTAMP_HINT}")


def _fail(stage: str, message: str) -> None:
    raise PipelineDefinitionError(f"stage {stage!r}: {message}")
