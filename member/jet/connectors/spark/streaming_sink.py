"""``Sinks.spark_stream``: Spark Structured Streaming reads the job's output as a stream.

The job's :class:`SparkStreamSinkP` processors buffer their (bare) items with positions; the
Spark side runs ``spark.readStream.format("jet")`` (offsets: the items each sink processor
has taken) and ``writeStream.format(format).option("checkpointLocation", ...).start(path)``
into any Spark streaming sink. Items stay buffered until Spark commits the micro-batch that
read them, so a failed read task is read again and a restarted Spark query re-reads its last
uncommitted micro-batch; the buffer is bounded (``buffer_items``), and a full buffer stops the
processor taking input, which backpressures the job. When the job's stream ends, the sink
completes once Spark has committed every item. Nothing here imports PySpark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from jet.connectors.base import Sink
from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark.processors import DEFAULT_SINK_BUFFER_ITEMS
from jet.connectors.spark.stages import check_format, local_input_path
from jet.connectors.spark.stream_endpoints import StreamSinkEndpoint
from jet.connectors.spark.streaming_source import spark_options
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor

OUTPUT_MODES = ("append", "update", "complete")


class SparkStreamReadFailedError(RuntimeError):
    """The Spark query reading a job's Spark stream sink failed; the message is Spark's."""


@dataclass(frozen=True)
class SparkStreamWriteSpec:
    """How the Spark side writes the stream a job's Spark stream sink produces."""

    format: str
    path: str | None = None
    checkpoint_location: str | None = None
    """The Spark query's checkpoint (a temporary directory if None: no resume after a restart)."""
    options: dict[str, str] = field(default_factory=dict)
    output_mode: str = "append"
    partition_by: tuple[str, ...] = ()
    schema: Any = None
    trigger_interval_ms: int | None = None
    """``trigger(processingTime=...)``; None: Spark's default, each micro-batch as soon as the last is done."""

    def start(self, frame: Any, checkpoint_location: str) -> Any:
        """Start the Spark query writing ``frame`` (the ``jet`` stream); returns the StreamingQuery."""
        writer = (frame.writeStream.format(self.format).outputMode(self.output_mode).options(**self.options)
                  .option("checkpointLocation", checkpoint_location))
        if self.trigger_interval_ms is not None:
            writer = writer.trigger(processingTime=f"{self.trigger_interval_ms} milliseconds")
        if self.partition_by:
            writer = writer.partitionBy(*self.partition_by)
        return writer.start(self.path) if self.path is not None else writer.start()


@dataclass(frozen=True)
class SparkStreamSinkSupplier:
    """The processor supplier of a Spark stream sink vertex, with the Spark side's recipe."""

    spec: SparkStreamWriteSpec
    buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS

    def __call__(self) -> "SparkStreamSinkP":
        return SparkStreamSinkP(self.buffer_items)


@dataclass(frozen=True)
class SparkStreamSink(Sink):
    """A sink whose items a Spark Structured Streaming query reads out of the job."""

    spec: SparkStreamWriteSpec | None = field(default=None, compare=False)


class SparkStreamSinkP(Processor):
    """Buffers the job's output for the Spark stream reader, with positions (see the module)."""

    def __init__(self, buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS) -> None:
        self._buffer_items = buffer_items
        self._endpoint: StreamSinkEndpoint | None = None

    @property
    def endpoint(self) -> StreamSinkEndpoint | None:
        return self._endpoint

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._endpoint = spark_hub.register_endpoint(
            context.member_index, context.job_id, context.vertex_name, "stream-sink",
            context.global_index, context.total_parallelism, capacity_items=self._buffer_items)

    def _check_spark_side(self) -> None:
        reason = self._endpoint.vertex.abort_reason
        if reason is not None:
            raise SparkStreamReadFailedError(f"the Spark side of {self.context.vertex_name!r} failed: {reason}")

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if not self._endpoint.is_full():
            self._endpoint.add(inbox.take_chunk())
        else:
            self._check_spark_side()

    def complete(self) -> bool:
        self._check_spark_side()
        endpoint = self._endpoint
        if not endpoint.input_done:
            endpoint.finish_input()
        return endpoint.finished

    def close(self) -> None:
        if self._endpoint is not None:
            spark_hub.unregister_endpoint(self._endpoint)
            self._endpoint = None


def check_stream_output(format: str, path: str | None, checkpoint_location: str | None) -> None:
    """Refuse to start a new streaming query (no checkpoint given) into a local file output that
    already has another query's log: Spark would skip the micro-batches that log has."""
    local = local_input_path(format, path)
    if checkpoint_location is None and local is not None and os.path.isdir(os.path.join(local, "_spark_metadata")):
        raise FileExistsError(f"Sinks.spark_stream: {path!r} holds the output of an earlier streaming query "
                              f"(its _spark_metadata log) and no checkpoint_location is given, so Spark would "
                              f"skip the micro-batches that log already has: remove it, write elsewhere, or "
                              f"give that query's checkpoint_location")


def spark_stream_sink(format: str, path: str | None = None, checkpoint_location: str | None = None, *,
                      output_mode: str = "append", partition_by: list[str] | tuple[str, ...] | str | None = None,
                      schema: Any = None, trigger_interval_ms: int | None = None,
                      buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS, name: str | None = None,
                      **options: Any) -> SparkStreamSink:
    """Items Spark writes with ``writeStream.format(format).outputMode(output_mode)
    .option("checkpointLocation", checkpoint_location).options(**options).start(path)``."""
    check_format(format, "Sinks.spark_stream")
    if output_mode not in OUTPUT_MODES:
        raise ValueError(f"Sinks.spark_stream: output_mode must be one of {', '.join(OUTPUT_MODES)}, "
                         f"got {output_mode!r}")
    if trigger_interval_ms is not None and (not isinstance(trigger_interval_ms, int) or trigger_interval_ms < 1):
        raise ValueError(f"Sinks.spark_stream: trigger_interval_ms must be an int >= 1, got {trigger_interval_ms!r}")
    if not isinstance(buffer_items, int) or buffer_items < 1:
        raise ValueError(f"Sinks.spark_stream: buffer_items must be an int >= 1, got {buffer_items!r}")
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    spec = SparkStreamWriteSpec(format, path, checkpoint_location, spark_options(options, "Sinks.spark_stream"),
                                output_mode, tuple(partition_by or ()), schema, trigger_interval_ms)
    stage_name = name or (f"spark-stream-{format}({path})" if path else f"spark-stream-{format}")
    return SparkStreamSink(stage_name, SparkStreamSinkSupplier(spec, buffer_items), 1, spec=spec,
                           preflight=lambda: check_stream_output(format, path, checkpoint_location))
