"""The Spark source and sink processors: the job's ends of the ``jet`` Spark format.

:class:`SparkSourceP` emits the rows Spark writer tasks stream to it, exactly once per row
position of each Spark partition (see docs/spark.md), and completes when the Spark driver's
commit says how many rows each partition has and all of them are emitted. :class:`SparkSinkP`
holds a bounded buffer that one Spark reader task pulls; when it is full the processor stops
taking input, which backpressures the job.
"""

from __future__ import annotations

from typing import Any

from jet.connectors.spark import hub as spark_hub
from jet.connectors.spark import protocol as p
from jet.connectors.spark.arrow_items import describe_arrow_schema
from jet.core.columnar import batch_to_rows
from jet.core.inbox import Inbox
from jet.core.outbox import Outbox
from jet.core.processor import Context
from jet.core.processors import ChunkEmittingProcessor
from jet.core.processors.batches import coalesce

DEFAULT_SINK_BUFFER_ITEMS = 64 * 1024
FRAMES_PER_CALL = 8


class SparkWriteFailedError(RuntimeError):
    """The Spark side of a job's Spark source failed or was aborted; the message is Spark's."""


class SparkReadFailedError(ValueError):
    """The job's items cannot go to the Spark reader (they do not fit its schema)."""


class SparkSourceP(ChunkEmittingProcessor):
    """Emits the rows that Spark tasks write with ``format("jet")`` to this processor.

    Writers send Arrow IPC record batches; with ``columnar=False`` each row becomes one item
    (a tuple, or a dict by column name when the writer's ``row_type`` is ``dict``), with
    ``columnar=True`` the batches are emitted as ``pyarrow.RecordBatch`` items. Every write's
    Arrow schema must equal the first one this vertex received on this member.

    Spark partition ``q`` goes to the processor with global index ``q % total``. For each of
    its partitions the processor knows how many rows it has emitted; a chunk of rows starting
    at position ``start`` contributes only its rows from that count on, so the rows a failed or
    speculative attempt already delivered are dropped when another attempt sends them again.
    """

    endpoint_kind = "source"

    def __init__(self, columnar: bool = False) -> None:
        self.columnar = columnar
        self._endpoint: spark_hub.SourceEndpoint | None = None
        self._emitted: dict[Any, int] = {}  # rows emitted per row key (see _row_key)
        self._chunk: list | None = None
        self._chunk_ack: tuple[int, int] | None = None
        self._chunk_key: Any = None  # the row key of ``_chunk``

    @property
    def endpoint(self) -> "spark_hub.SourceEndpoint | None":
        return self._endpoint

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._endpoint = spark_hub.register_endpoint(
            context.member_index, context.job_id, context.vertex_name, self.endpoint_kind,
            context.global_index, context.total_parallelism)

    def complete(self) -> bool:
        endpoint = self._endpoint
        for _ in range(FRAMES_PER_CALL):
            if self._chunk is not None:
                if not self.emit_list(self._chunk):
                    return False
                self._chunk = None
                endpoint.consumed(*self._chunk_ack)
            if not endpoint.frames:
                break
            peer, header, frame, offset, footprint = endpoint.frames.popleft()
            key, start = self._row_key(header), int(header["start"])
            end = start + int(header["n"])
            # rows of a settled key (all emitted and forgotten) count as emitted to their end
            emitted = end if self._is_settled(key) else self._emitted.get(key, 0)
            if start > emitted:
                raise SparkWriteFailedError(
                    f"{self._describe(key)}: rows from position {start} arrived but only "
                    f"{emitted} were emitted (a writer skipped rows)")
            if end <= emitted:  # a retried or speculative attempt re-sending rows: drop them
                endpoint.consumed(peer, footprint)
                spark_hub.SourceEndpoint.dropped_rows_total += end - start
                continue
            spark_hub.SourceEndpoint.dropped_rows_total += emitted - start
            self._chunk = self._decode(header, frame, offset, emitted - start)
            self._chunk_ack, self._chunk_key = (peer, footprint), key
            self._emitted[key] = end
        return self._finished()

    def _decode(self, header: dict, frame: bytes, offset: int, skip: int) -> list:
        """The items of a ``rows`` frame from its row ``skip`` on (earlier ones were emitted)."""
        if header.get("fmt") != p.ARROW:
            raise SparkWriteFailedError(f"{self._describe(self._row_key(header))}: a rows frame not in Arrow "
                                        f"format (header {header}); writers send Arrow IPC")
        schema, batches = p.decode_ipc(frame, offset)
        self._check_schema(schema, header)  # a few field compares: cheap next to the rows
        items: list = []
        for batch in batches:
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            if skip:
                batch, skip = batch.slice(skip), 0
            if self.columnar:
                items.append(batch)
            else:
                items.extend(batch_to_rows(batch, str(header.get("row_type", "tuple"))))
        # A frame's batches as one item: the stage's chain sizes its calls in items, not rows
        return coalesce(items) if self.columnar else items

    def _check_schema(self, schema: Any, header: dict) -> None:
        vertex = self._endpoint.vertex
        with vertex.changed:
            if vertex.arrow_schema is None:
                vertex.arrow_schema = schema
                return
            first = vertex.arrow_schema
        if not schema.equals(first):
            raise SparkWriteFailedError(
                f"{self._describe(self._row_key(header))}: the Spark write's schema "
                f"({describe_arrow_schema(schema)}) differs from the schema of the first write into "
                f"{self.context.vertex_name!r} ({describe_arrow_schema(first)}); every write into one "
                f"Spark source must have the same columns and types")

    def _row_key(self, header: dict) -> Any:
        """What row positions count in: the Spark partition."""
        return int(header["part"])

    def _is_settled(self, key: Any) -> bool:
        """Whether every row of ``key`` is emitted and forgotten (later rows are duplicates)."""
        return False

    def _describe(self, key: Any) -> str:
        return f"Spark partition {key}"

    def _finished(self) -> bool:
        if self._chunk is not None or self._endpoint.frames:
            return False
        vertex = self._endpoint.vertex
        if vertex.abort_reason is not None:
            raise SparkWriteFailedError(f"the Spark side of {self.context.vertex_name!r} failed: "
                                        f"{vertex.abort_reason}")
        counts = vertex.counts
        if counts is None:
            return False
        me, total = self.context.global_index, self.context.total_parallelism
        for partition, count in counts.items():
            if partition % total != me:
                continue
            emitted = self._emitted.get(partition, 0)
            if emitted > count:
                raise SparkWriteFailedError(f"Spark partition {partition}: {emitted} rows emitted but "
                                            f"the committed write has {count}")
            if emitted < count:
                return False  # the committed attempt's last frames are still on their way
        stray = [q for q in self._emitted if q not in counts]
        if stray:
            raise SparkWriteFailedError(f"rows of Spark partitions {stray} arrived, but the committed "
                                        f"write has no such partition")
        return True

    def close(self) -> None:
        if self._endpoint is not None:
            spark_hub.unregister_endpoint(self._endpoint)
            self._endpoint = None


class SparkSinkP(ChunkEmittingProcessor):
    """Buffers the job's output for one Spark reader task (``spark.read.format("jet")``).

    Takes an inbox chunk only while the buffer holds fewer than ``buffer_items`` rows, and
    completes once a reader has pulled everything, so the job ends after Spark has its output.
    Items are rows (tuples by position, dicts by column name, scalars) or ``pyarrow.RecordBatch``es
    (forwarded as they are); the reader gets Arrow batches of its schema, and an item that does
    not fit fails the job with a message naming the column, its type and the value.
    """

    def __init__(self, buffer_items: int = DEFAULT_SINK_BUFFER_ITEMS) -> None:
        self._buffer_items = buffer_items
        self._endpoint: spark_hub.SinkEndpoint | None = None

    @property
    def endpoint(self) -> "spark_hub.SinkEndpoint | None":
        return self._endpoint

    def init(self, outbox: Outbox, context: Context) -> None:
        super().init(outbox, context)
        self._endpoint = spark_hub.register_endpoint(
            context.member_index, context.job_id, context.vertex_name, "sink",
            context.global_index, context.total_parallelism, capacity_items=self._buffer_items)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self._check_failure()
        if not self._endpoint.is_full():
            self._endpoint.add(inbox.take_chunk())

    def _check_failure(self) -> None:
        if self._endpoint.failure is not None:
            raise SparkReadFailedError(self._endpoint.failure)
        reason = self._endpoint.vertex.abort_reason
        if reason is not None:  # the driver could not read or write the sink's output
            raise SparkReadFailedError(f"the Spark side of {self.context.vertex_name!r} failed: {reason}")

    def complete(self) -> bool:
        self._check_failure()
        endpoint = self._endpoint
        if not endpoint.input_done:
            endpoint.finish_input()
        return endpoint.done_sent

    def close(self) -> None:
        if self._endpoint is not None:
            spark_hub.unregister_endpoint(self._endpoint)
            self._endpoint = None
