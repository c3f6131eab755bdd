"""A Spark partition's rows to and from the members, shared by the batch and streaming halves of
the ``jet`` data source (:mod:`.datasource`, :mod:`.streaming_datasource`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from jet.cluster.edges.chunk_packets import chunk_footprint
from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import MemberLink
from jet.connectors.spark.options import MAX_FRAME_BYTES, JetOptions

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


def send_partition(options: JetOptions, addresses: list[str], members: list[int],
                   batches: Iterator[Any], partition: int, attempt: int, routing: dict | None = None) -> int:
    """Stream one Spark partition (Arrow batches) to its source processor ``partition % N``
    as Arrow IPC frames of at most ``chunk_rows`` rows and about :data:`MAX_FRAME_BYTES`
    (:func:`frame_batches`; no Python object per row), under the member's flow control, then
    wait until every row is queued there; returns the row count.
    ``routing`` adds header fields (a stream's query and micro-batch ids)."""
    processor = partition % len(addresses)
    what = f"Spark partition {partition} (attempt {attempt}) -> {options.vertex!r}#{processor}"
    link = MemberLink(addresses[processor], members[processor], options.token, options.tls())
    base = {"op": p.ROWS, "job": options.job, "vertex": options.vertex, "proc": processor,
            "part": partition, "fmt": p.ARROW, "row_type": options.row_type, **(routing or {})}
    position, sent_seq = 0, 0
    try:
        for frame in frame_batches(batches, options.chunk_rows):
            rows = sum(batch.num_rows for batch in frame)
            link.wait_to_send(sent_seq, options.send_timeout_s, what)
            payload_bytes = link.send({**base, "start": position, "n": rows}, p.to_ipc(frame[0].schema, frame))
            sent_seq += chunk_footprint(payload_bytes, rows)
            position += rows
        link.request({"op": p.FLUSH, "job": options.job, "vertex": options.vertex, "proc": processor},
                     timeout_s=options.send_timeout_s)
    finally:
        link.close()
    return position


def frame_batches(batches: Iterator[Any], max_rows: int,
                  max_bytes: int = MAX_FRAME_BYTES) -> Iterator[list]:
    """Spark's Arrow batches as the batches of each frame, each frame ``max_rows`` rows and about
    ``max_bytes`` at most (at least one row): a larger batch is sliced (zero-copy), smaller ones
    travel together in one frame (Spark's batches have 10,000 rows by default: a frame per batch
    would make a columnar stage take them one by one however large ``chunk_rows`` is)."""
    frame: list = []
    rows = size = 0
    for batch in batches:
        row_bytes = batch.nbytes / batch.num_rows if batch.num_rows else 0
        start = 0
        while start < batch.num_rows:
            fit = max_rows - rows
            if row_bytes:
                fit = max(1, min(fit, int((max_bytes - size) / row_bytes)))
            piece = batch.slice(start, fit)
            frame.append(piece)
            rows += piece.num_rows
            size += piece.num_rows * row_bytes
            start += piece.num_rows
            if rows == max_rows or size > max_bytes - row_bytes:
                yield frame
                frame, rows, size = [], 0, 0
    if frame:
        yield frame


def arrow_schema_ipc(schema: "StructType") -> Any:
    """The Arrow schema Spark expects of the batches a reader yields, as IPC bytes."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return p.to_ipc(to_arrow_schema(schema, timezone="UTC"))
