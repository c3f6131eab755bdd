"""The drivers' batch transfers between Spark and a job, as ``mapInArrow`` tasks.

``df.write.format("jet")`` and ``spark.read.format("jet")`` run PySpark's Python data source
protocol, which starts a fresh Python planning process per step (look the format up, create
the source, plan the write, plan the read, commit): on a new session each one imports PySpark
and the job's modules again, seconds of a small run (bench/README.md). The drivers move the
same Arrow batches with the same per-task functions, but as ``mapInArrow`` tasks, whose Python
workers Spark forks from one long-lived daemon:

- writing, each task streams its Spark partition with :func:`~.partition_io.send_partition` and
  returns one row (partition, rows, attempt); the driver collects the rows of the successful
  attempts and sends the members the commit, as the data source's ``commit`` does;
- reading, ``spark.range(n, numPartitions=n)`` gives one task per sink processor, which pulls
  it with :class:`~.datasource.JetReader`.

The ``jet`` format itself stays what users' own Spark jobs call.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator

from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import tell_members
from jet.connectors.spark.options import JetOptions

COMMIT_SCHEMA = "partition long, rows long, attempt long"
_INT64 = struct.Struct("=q")


def commit_row(partition: int, rows: int, attempt: int) -> Any:
    """A write task's one-row result, a ``RecordBatch`` of :data:`COMMIT_SCHEMA`, built from
    buffers: ``pyarrow.array`` would import pandas into the Spark worker first (0.2-0.4 s at the
    end of each worker's first write, with the job waiting for the commit)."""
    import pyarrow as pa

    columns = [pa.Array.from_buffers(pa.int64(), 1, [None, pa.py_buffer(_INT64.pack(value))])
               for value in (partition, rows, attempt)]
    return pa.RecordBatch.from_arrays(columns, names=["partition", "rows", "attempt"])


def write_frame(frame: Any, options: JetOptions, owners: dict[int, int]) -> dict[str, int]:
    """Stream every partition of ``frame`` into the job's Spark source vertex (``owners``:
    processor index -> member), commit, and return the committed row count per partition."""
    addresses = [options.members[owners[i]] for i in range(len(owners))]
    members = [owners[i] for i in range(len(owners))]

    def send(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        from jet.connectors.spark.partition_io import send_partition

        context = TaskContext.get()
        partition, attempt = context.partitionId(), context.attemptNumber()
        rows = send_partition(options, addresses, members, batches, partition, attempt)
        yield commit_row(partition, rows, attempt)

    committed = frame.mapInArrow(send, COMMIT_SCHEMA).collect()
    counts = {str(row["partition"]): row["rows"] for row in committed}
    tell_members(options, {"op": p.COMMIT, "counts": counts}, set(members))
    return counts


def read_frame(spark: Any, options: JetOptions, owners: dict[int, int], schema: Any) -> Any:
    """The DataFrame of the job's Spark sink vertex (``owners``: processor index -> member),
    one task per sink processor; ``schema`` is a ``StructType``."""
    from jet.connectors.spark.datasource import JetReader

    reader = JetReader(options, owners, schema)
    partitions = reader.partitions()

    def pull(ids: Iterator[Any]) -> Iterator[Any]:
        for batch in ids:
            for index in batch.column(0).to_pylist():
                yield from reader.read(partitions[index])  # RecordBatches of ``schema``

    return spark.range(len(partitions), numPartitions=max(1, len(partitions))).mapInArrow(pull, schema)


def sink_schema(spark: Any, schema: Any, options: JetOptions) -> Any:
    """The ``StructType`` of a sink: the stage's (a DDL string or a ``StructType``), else
    inferred from the sink's first items, as ``spark.read.format("jet")`` does."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    from jet.connectors.spark.datasource import JetDataSource

    if schema is None:
        return JetDataSource(options.as_spark_options()).schema()
    if isinstance(schema, StructType):
        return schema
    parsed = _parse_datatype_string(schema)
    if not isinstance(parsed, StructType):
        raise ValueError(f"Sinks.spark: schema {schema!r} is not a row type such as 'key long, total double'")
    return parsed
