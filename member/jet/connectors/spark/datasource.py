"""The ``jet`` PySpark data source: ``df.write.format("jet")`` into a running job's Spark source,
``spark.read.format("jet")`` out of its Spark sink.

Register it with :func:`register` (the drivers of ``jet spark-source``/``jet spark-sink`` do).
Writer tasks each stream one Spark partition to the source processor ``partition % N`` with
Jet's flow control; the driver's commit sends every partition's row count, and the source
completes once each partition has been emitted to that count (exactly once per row position;
docs/spark.md says where that is weaker). Reader tasks are one per sink processor.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterator

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import JetSparkError, MemberLink, tell_members, wait_for_vertex
from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.partition_io import arrow_schema_ipc, send_partition
from jet.connectors.spark.schema import SchemaInferenceError, infer_schema
from jet.connectors.spark.streaming_datasource import JetStreamReader, JetStreamWriter

FORMAT_NAME = "jet"
READER_CREDIT_CHUNKS = 4
SAMPLE_ITEMS = 100


class JetDataSource(DataSource):
    """The ``jet`` format; see the module docstring and :class:`~jet.connectors.spark.options.JetOptions`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _options(self) -> JetOptions:
        return JetOptions.parse(self.options)

    def schema(self) -> StructType:
        """Inferred from the first items of the job's Spark sink (read without ``.schema(...)``)."""
        options = self._options()
        owners = wait_for_vertex(options, ("sink", "stream-sink"))
        deadline = time.monotonic() + options.send_timeout_s
        links = [MemberLink(options.members[m], m, options.token, options.tls()) for m in sorted(set(owners.values()))]
        try:
            while True:
                ready = True
                for link in links:
                    reply, items = link.request({"op": p.SAMPLE, "job": options.job,
                                                 "vertex": options.vertex, "n": SAMPLE_ITEMS})
                    if items:
                        return infer_schema(items)
                    ready = ready and reply.get("ready")
                if ready:
                    raise SchemaInferenceError(
                        f"the Spark sink {options.vertex!r} of job {options.job!r} produced no items to "
                        f"infer a schema from; give Sinks.spark(..., schema=...) or spark.read.schema(...)")
                if time.monotonic() > deadline:
                    raise JetSparkError(f"the Spark sink {options.vertex!r} produced no item to infer a "
                                        f"schema from within {options.send_timeout_s} s")
                time.sleep(0.1)
        finally:
            for link in links:
                link.close()

    def writer(self, schema: StructType, overwrite: bool) -> "JetWriter":
        options = self._options()
        owners = wait_for_vertex(options, "source")
        return JetWriter(options, [options.members[owners[i]] for i in range(len(owners))],
                         [owners[i] for i in range(len(owners))])

    def reader(self, schema: StructType) -> "JetReader":
        options = self._options()
        owners = wait_for_vertex(options, "sink")
        return JetReader(options, owners, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        """``writeStream.format("jet")``: each micro-batch into the job's Spark stream source."""

        options = self._options()
        owners = wait_for_vertex(options, "stream-source")
        return JetStreamWriter(options, [options.members[owners[i]] for i in range(len(owners))],
                               [owners[i] for i in range(len(owners))])

    def streamReader(self, schema: StructType) -> Any:
        """``spark.readStream.format("jet")``: the job's Spark stream sink, as a stream."""

        # No wait for the vertex: Spark makes readers again when it plans a micro-batch, maybe
        # after the sink has completed (the driver waits for it before starting the query).
        return JetStreamReader(self._options(), schema)


@dataclass
class JetCommitMessage(WriterCommitMessage):
    """What a successful writer task reports: its Spark partition and how many rows it has."""

    partition: int
    rows: int
    attempt: int


class JetWriter(DataSourceArrowWriter):
    """Streams each Spark partition (as Arrow batches) to its Spark source processor."""

    def __init__(self, options: JetOptions, addresses: list[str], members: list[int]) -> None:
        self.options = options
        self.addresses = addresses
        self.members = members

    def write(self, iterator: Iterator[Any]) -> JetCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        partition = context.partitionId() if context else 0
        attempt = context.attemptNumber() if context else 0
        rows = send_partition(self.options, self.addresses, self.members, iterator,
                              partition, attempt)
        return JetCommitMessage(partition, rows, attempt)

    def commit(self, messages: list[JetCommitMessage | None]) -> None:
        """Every task succeeded: tell the members each partition's final row count."""
        counts = {str(m.partition): m.rows for m in messages if m is not None}
        tell_members(self.options, {"op": p.COMMIT, "counts": counts}, set(self.members))

    def abort(self, messages: list[JetCommitMessage | None]) -> None:
        """The write failed: fail the job's Spark source (unless a driver reports it)."""
        if self.options.driver_reports_failure:
            return
        tell_members(self.options, {"op": p.ABORT, "reason": "the Spark write job was aborted"},
                     set(self.members))


@dataclass
class JetPartition(InputPartition):
    """One sink processor: its global index and the member running it."""

    processor: int
    member: int


class JetReader(DataSourceReader):
    """One Spark partition per sink processor; each pulls its processor's chunks with credits."""

    def __init__(self, options: JetOptions, owners: dict[int, int], schema: StructType) -> None:
        self.options = options
        self.owners = owners
        self.schema = schema

    def partitions(self) -> list[JetPartition]:
        return [JetPartition(index, member) for index, member in sorted(self.owners.items())]

    def read(self, partition: JetPartition) -> Iterator[Any]:
        """The sink processor's items as ``pyarrow.RecordBatch``es of the read's schema (the
        member builds them; the pull carries the schema)."""
        options = self.options
        link = MemberLink(options.members[partition.member], partition.member, options.token,
                          options.tls())
        pull = {"op": p.PULL, "job": options.job, "vertex": options.vertex, "proc": partition.processor}
        try:
            link.send({**pull, "credit": READER_CREDIT_CHUNKS, "fmt": p.ARROW}, arrow_schema_ipc(self.schema))
            while True:
                try:
                    header, batches = link.chunks.get(timeout=options.send_timeout_s)
                except Exception:
                    raise JetSparkError(f"sink {options.vertex!r}#{partition.processor} sent nothing for "
                                        f"{options.send_timeout_s} s") from None
                if header["op"] == p.ERROR:
                    raise JetSparkError(str(header.get("message")))
                if header.get("done"):
                    return
                link.send({**pull, "credit": 1})
                yield from batches
        finally:
            link.close()


def register(spark: Any) -> None:
    """Register the ``jet`` format with a SparkSession."""
    spark.dataSource.register(JetDataSource)
