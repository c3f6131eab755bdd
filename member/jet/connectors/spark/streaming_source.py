"""``Sources.spark_stream``: Spark Structured Streaming writes each micro-batch into the job.

The Spark side runs ``spark.readStream.format(format).options(...).load(path)`` and writes it
with ``writeStream.format("jet")`` (the stream writer of the ``jet`` format) into the job's
:class:`SparkStreamSourceP` processors, with the flow control of a batch write. Rows are
exactly once per row position of each Spark partition *of each micro-batch*: a row's key is
(Spark query id, micro-batch id, partition), so a retried task, a speculative twin or a
micro-batch Spark runs again after its driver restarted from its checkpoint, is dropped
where it repeats rows already emitted. The stream ends when its Spark query does (a trigger
``available_now``, or the driver stopping it): the source then completes once every committed
micro-batch is emitted. Nothing here imports PySpark.

Under a job that takes snapshots, a member acknowledges the commit of a micro-batch to Spark
only once the snapshot that holds all its rows has completed (phase 2), so Spark commits the
batch to its checkpoint only then. Each processor saves, under ``BroadcastKey(("spark-stream-
source", global index))``, the micro-batches it has settled and the rows it has emitted of the
others; a restored processor drops the rows of a replayed batch that its snapshot already has
and emits the rest, so every row reaches the job exactly once (at-least-once jobs: at least).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from jet.connectors.spark.processors import SparkSourceP, SparkWriteFailedError
from jet.connectors.spark.stages import check_format, check_local_input
from jet.connectors.transactions import has_tag
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.snapshot_keys import BroadcastKey
from jet.pipeline.source_sink import StreamSource

log = logging.getLogger("jet.connectors.spark")
SOURCE_TAG = "spark-stream-source"


def spark_options(options: dict[str, Any], what: str) -> dict[str, str]:
    """Keyword options as Spark's string options (booleans as ``true``/``false``)."""
    converted = {}
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, (dict, list, set)):
            raise TypeError(f"{what}: option {key!r} must be a string, number or bool, got {value!r}")
        converted[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return converted


@dataclass(frozen=True)
class SparkStreamReadSpec:
    """How the Spark side builds the streaming DataFrame of a Spark stream source."""

    format: str
    path: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    schema: Any = None
    row_type: str = "tuple"
    available_now: bool = False
    """``trigger(availableNow=True)``: read what is there when the query starts, then end."""
    checkpoint_location: str | None = None
    """The checkpoint of the Spark query writing into the job (a temporary directory if None)."""

    def build(self, spark: Any) -> Any:
        """The streaming DataFrame to write into the job."""
        reader = spark.readStream.format(self.format).options(**self.options)
        if self.schema is not None:
            reader = reader.schema(self.schema)
        return reader.load(self.path) if self.path is not None else reader.load()


@dataclass(frozen=True)
class SparkStreamSourceSupplier:
    """The processor supplier of a Spark stream source vertex, with the Spark side's recipe."""

    spec: SparkStreamReadSpec

    def __call__(self) -> "SparkStreamSourceP":
        return SparkStreamSourceP()


@dataclass(frozen=True)
class SparkStreamSource(StreamSource):
    """A stream source whose items a Spark Structured Streaming query writes into the job."""

    spec: SparkStreamReadSpec | None = field(default=None, compare=False)


class SparkStreamSourceP(SparkSourceP):
    """Emits the rows of the micro-batches a Spark streaming query writes to this processor.

    Positions count per (query, micro-batch, partition). The Spark driver commits each
    micro-batch with every partition's row count; once this processor has emitted all rows of
    its partitions of a committed batch, it forgets the batch, and any later frame of it is a
    duplicate. It completes after the query ended (``end``) and every commit is settled.
    """

    endpoint_kind = "stream-source"

    def __init__(self) -> None:
        super().__init__()
        self._settled_through: dict[str, int] = {}  # per query: every batch up to this one is settled
        self._warned_uncommitted = False
        self._snapshot_settled: dict[str, int] = {}  # what the snapshot in progress holds
        self._restored: list[tuple[int, dict]] = []  # (old global index, its saved state)
        self._restored_settled: dict[int, dict[str, int]] = {}  # old processor -> its settled batches
        self._restored_total = 1

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        if context.snapshots_enabled:
            self._endpoint.vertex.commits.requires_snapshot = True

    def _row_key(self, header: dict) -> Any:
        return str(header["query"]), int(header["batch"]), int(header["part"])

    def _is_settled(self, key: Any) -> bool:
        if key[1] <= self._settled_through.get(key[0], -1):
            return True
        # settled before the restore by the processor that owned the partition then
        return bool(self._restored_settled) and key[1] <= self._restored_settled.get(
            key[2] % self._restored_total, {}).get(key[0], -1)

    def _describe(self, key: Any) -> str:
        return f"Spark partition {key[2]} of micro-batch {key[1]}"

    def _settle(self) -> bool:
        """Forget every committed batch whose rows this processor has all emitted, in batch
        order; False while a committed batch still waits for rows."""
        if self._chunk is not None:
            return False  # its rows are counted but not all emitted yet
        vertex = self._endpoint.vertex
        me, total = self.context.global_index, self.context.total_parallelism
        for (query, batch), counts in vertex.commits.pending():
            if batch <= self._settled_through.get(query, -1):
                vertex.commits.settled((query, batch), me, len(vertex.processors))
                continue
            for partition, count in counts.items():
                if partition % total != me:
                    continue
                key = (query, batch, partition)
                emitted = count if self._is_settled(key) else self._emitted.get(key, 0)
                if emitted > count:
                    raise SparkWriteFailedError(f"Spark partition {partition} of micro-batch {batch}: "
                                                f"{emitted} rows emitted but the committed write has {count}")
                if emitted < count:
                    return False  # the committed attempt's last frames are still on their way
            mine = [key for key in self._emitted if key[0] == query and key[1] == batch]
            stray = [key[2] for key in mine if key[2] not in counts]
            if stray:
                raise SparkWriteFailedError(f"rows of Spark partitions {stray} of micro-batch {batch} arrived, "
                                            f"but the committed micro-batch has no such partition")
            for key in mine:
                del self._emitted[key]
            self._settled_through[query] = batch
            vertex.commits.settled((query, batch), me, len(vertex.processors))
        return True

    # -- snapshots --------------------------------------------------------------------------------
    def save_to_snapshot(self) -> bool:
        emitted = dict(self._emitted)
        if self._chunk is not None:  # counted when taken: leave out its rows not emitted yet
            done = self._position if self._results is self._chunk else 0
            emitted[self._chunk_key] -= len(self._chunk) - done
        self._snapshot_settled = dict(self._settled_through)
        self.outbox.offer_to_snapshot(BroadcastKey((SOURCE_TAG, self.context.global_index)), {
            "total": self.context.total_parallelism, "settled": self._snapshot_settled, "emitted": emitted})
        return True

    def snapshot_commit_finish(self, success: bool) -> bool:
        if success:
            vertex = self._endpoint.vertex
            vertex.commits.durable(self.context.global_index, self._snapshot_settled, list(vertex.processors))
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        while not inbox.is_empty():
            key, value = inbox.peek()
            if not has_tag(key, SOURCE_TAG):
                raise ValueError(f"Spark stream source {self.context.vertex_name!r}: unexpected snapshot "
                                 f"entry {key!r}")
            self._restored.append((key.key[1], value))
            inbox.remove()

    def finish_snapshot_restore(self) -> bool:
        """Take this processor's partitions' emitted rows; a batch every old processor settled
        is settled here (the minimum), one only some settled is settled for their partitions."""
        me, total = self.context.global_index, self.context.total_parallelism
        queries = {query for _, state in self._restored for query in state["settled"]}
        for query in queries:
            self._settled_through[query] = min(state["settled"].get(query, -1) for _, state in self._restored)
        for index, state in self._restored:
            self._restored_total = state["total"]
            self._restored_settled[index] = state["settled"]
            for key, count in state["emitted"].items():
                if key[2] % total == me:
                    self._emitted[key] = count
        self._restored = []
        vertex = self._endpoint.vertex
        vertex.commits.durable(me, self._settled_through, list(vertex.processors))  # a snapshot holds it
        return True

    def _finished(self) -> bool:
        vertex = self._endpoint.vertex
        if vertex.abort_reason is not None:
            raise SparkWriteFailedError(f"the Spark side of {self.context.vertex_name!r} failed: "
                                        f"{vertex.abort_reason}")
        settled = self._settle() if vertex.commits.counts else True
        if self._chunk is not None or self._endpoint.frames or not vertex.ended or not settled:
            return False
        if self._emitted and not self._warned_uncommitted:
            self._warned_uncommitted = True
            log.warning("Spark stream source %r ended with rows of uncommitted micro-batches emitted "
                        "(the query was stopped in the middle of a micro-batch): %s",
                        self.context.vertex_name, sorted(self._emitted))
        return True


def spark_stream_source(format: str, path: str | None = None, *, schema: Any = None, as_dicts: bool = False,
                        available_now: bool = False, checkpoint_location: str | None = None,
                        name: str | None = None, **options: Any) -> SparkStreamSource:
    """Rows of ``spark.readStream.format(format).options(**options)[.schema(schema)].load(path)``,
    each micro-batch written into the job as it comes; see the module docstring."""
    check_format(format, "Sources.spark_stream")
    spec = SparkStreamReadSpec(format, path, spark_options(options, "Sources.spark_stream"), schema,
                               "dict" if as_dicts else "tuple", bool(available_now), checkpoint_location)
    stage_name = name or (f"spark-stream-{format}({path})" if path else f"spark-stream-{format}")
    return SparkStreamSource(stage_name, SparkStreamSourceSupplier(spec), 1, spec=spec,
                             preflight=lambda: check_local_input(format, path, "Sources.spark_stream"))
