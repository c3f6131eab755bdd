"""``Sinks.spark_stream``: Spark Structured Streaming reads the job's output as a stream.

The job's :class:`SparkStreamSinkP` processors buffer their (bare) items with positions; the
Spark side runs ``spark.readStream.format("jet")`` (offsets: the items each sink processor
has taken) and ``writeStream.format(format).option("checkpointLocation", ...).start(path)``
into any Spark streaming sink. Items stay buffered until Spark commits the micro-batch that
read them, so a failed read task is read again and a restarted Spark query re-reads its last
uncommitted micro-batch; the buffer is bounded (``buffer_items``), and a full buffer stops the
processor taking input, which backpressures the job. When the job's stream ends, the sink
completes once Spark has committed every item. Nothing here imports PySpark.

Under a job that takes snapshots, Spark sees only the items a completed snapshot holds: each
processor saves its buffered items (those Spark has not committed) under
``BroadcastKey(("spark-stream-sink", global index))`` and, in phase 2, lets Spark read up to
where that snapshot was taken. So an item Spark has read is never emitted again after a
restore, and one it has not committed is still buffered there; the job's output reaches Spark
exactly once under an exactly-once job. Items wait for a snapshot interval before Spark sees
them; the buffer bound counts only the items Spark may read. A job restored on fewer
processors hands the buffered items of the processors it lost to the one with their index
modulo the new count, where Spark may read again what it had read but not committed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark.processors import DEFAULT_SINK_BUFFER_ITEMS
from jet.connectors.spark.stages import check_format, local_input_path
from jet.connectors.spark.stream_endpoints import StreamSinkEndpoint
from jet.connectors.spark.streaming_source import spark_options
from jet.connectors.transactions import has_tag
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context, Processor
from jet.core.snapshot_keys import BroadcastKey
from jet.pipeline.source_sink import Sink

OUTPUT_MODES = ("append", "update", "complete")
SINK_TAG = "spark-stream-sink"


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
        self._snapshot_end = 0  # what the snapshot in progress holds
        self._restored: list[tuple[int, tuple[int, list]]] = []  # (old global index, (committed, items))

    @property
    def endpoint(self) -> StreamSinkEndpoint | None:
        return self._endpoint

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._endpoint = spark_hub.register_endpoint(
            context.member_index, context.job_id, context.vertex_name, "stream-sink",
            context.global_index, context.total_parallelism, capacity_items=self._buffer_items)
        if context.snapshots_enabled:
            self._endpoint.make_visible(0)  # nothing before a snapshot holds it

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
            endpoint.make_visible(None)  # no snapshot follows the end of the input
            endpoint.finish_input()
        return endpoint.finished

    # -- snapshots --------------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        committed, self._snapshot_end, items = self._endpoint.buffered()
        self.outbox.offer_to_snapshot(BroadcastKey((SINK_TAG, self.context.global_index)), (committed, items))
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            self._endpoint.make_visible(self._snapshot_end)
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        while not inbox.is_empty():
            key, value = inbox.peek()
            if not has_tag(key, SINK_TAG):
                raise ValueError(f"Spark stream sink {self.context.vertex_name!r}: unexpected snapshot entry {key!r}")
            self._restored.append((key.key[1], value))
            inbox.remove()

    def finish_snapshot_restore(self) -> bool:
        """Hold this processor's saved items at their positions, then those of lost processors
        whose index maps here, at new positions; all of them are in the snapshot: visible."""
        me, total = self.context.global_index, self.context.total_parallelism
        endpoint = self._endpoint
        for index, (committed, items) in self._restored:
            if index == me:
                endpoint.restore(committed, items, committed + len(items))
        adopted = [items for index, (_, items) in sorted(self._restored)
                   if index != me and index >= total and index % total == me]
        for items in adopted:
            endpoint.add(list(items))
        if adopted:
            endpoint.make_visible(endpoint.appended)
            self.context.logger.warning(
                "Spark stream sink %r restored on fewer processors: processor %d takes over %d buffered "
                "item(s) of processors that are gone; Spark may read again those it had read but not "
                "committed", self.context.vertex_name, me, sum(map(len, adopted)))
        self._restored = []
        return True

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
