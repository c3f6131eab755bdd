"""Time each per-row stage of the Spark -> Jet -> Spark path in isolation, one process.

    PYTHONPATH=member python3 bench/spark_stages.py [--rows 1000000] [--batch 10000] [--chunk 4096] [--repeat 5]

Builds ``rows`` rows (key long, value double) as Arrow record batches of ``batch`` rows (what
Spark's ``DataSourceArrowWriter`` hands a writer task: ``spark.sql.execution.arrow.
maxRecordsPerBatch`` = 10,000), then times, with the project's own functions:

- the pickle path (before issue 13): ``to_pylist`` + zip to tuples and ``pickle.dumps`` of
  ``chunk``-row chunks in the writer, ``pickle.loads`` on the member;
- the Arrow path: the writer's IPC frames of ``chunk`` rows (``protocol.to_ipc`` +
  ``encode_sized``, as ``send_partition`` does), the member's ``decode_ipc`` alone (columnar
  source) and with ``batch_to_rows`` to tuples or dicts (row source);
- the member's per-row Python of the bench's job (a stand-in for the keyed aggregation);
- the sink: items -> Arrow batches of the reader's schema (``items_to_batches`` on tuples and
  on dicts, ``RecordBatch.from_pylist`` on dicts for comparison), and the old per-item
  ``item_to_row_fn`` the reader task ran.
Prints seconds and rows/s per stage. Single thread, no network: an upper bound on what each
stage costs the pipeline. Each stage runs ``--repeat`` times (default 5); the fastest counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

import pyarrow as pa  # noqa: E402
from jet.cluster.links.packets import FrameType  # noqa: E402
from jet.connectors.spark import protocol as p  # noqa: E402
from jet.connectors.spark.arrow_items import item_to_row_fn, items_to_batches  # noqa: E402
from jet.core.columnar import batch_to_rows  # noqa: E402

REPEAT = 5


def timed(results: list, name: str, rows: int, fn):
    """Run ``fn`` REPEAT times; keep the fastest (the machine is shared and noisy)."""
    seconds = float("inf")
    for _ in range(REPEAT):
        started = time.perf_counter()
        value = fn()
        seconds = min(seconds, time.perf_counter() - started)
    results.append((name, seconds, rows / seconds if seconds else float("inf")))
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    global REPEAT
    REPEAT = args.repeat
    import numpy as np

    ids = np.arange(args.rows, dtype=np.int64)
    table = pa.table({"key": ids % args.keys, "value": (ids % 1000).astype(np.float64) / 10})
    batches = table.to_batches(max_chunksize=args.batch)
    names = ["key", "value"]
    results: list = []

    def to_tuples():
        return [batch_to_rows(batch, "tuple") for batch in batches]

    tuple_batches = timed(results, "pickle path, writer: Arrow batch -> tuples (to_pylist + zip)", args.rows,
                          to_tuples)

    def pickle_chunks():
        frames = []
        for rows in tuple_batches:
            for start in range(0, len(rows), args.chunk):
                frames.append(p.encode_sized(FrameType.SPARK_REQUEST, {"op": "rows", "start": start,
                                                                       "n": args.chunk},
                                             rows[start:start + args.chunk])[0])
        return frames

    frames = timed(results, f"pickle path, writer: pickle {args.chunk}-row chunks", args.rows, pickle_chunks)
    pickled_bytes = sum(len(f) for f in frames)

    def unpickle():
        out = []
        for frame in frames:
            header, offset = p.decode_header(frame)
            out.append(p.decode_payload(frame, offset))
        return out

    chunks = timed(results, "pickle path, member: unpickle chunks", args.rows, unpickle)

    def aggregate():
        key_fn, value_fn = (lambda row: row[0]), (lambda row: row[1])
        acc: dict = {}
        for chunk in chunks:
            for row in chunk:
                key = key_fn(row)
                entry = acc.get(key)
                if entry is None:
                    entry = acc[key] = [0.0, 0]
                entry[0] += value_fn(row)
                entry[1] += 1
        return acc

    timed(results, "member: per-row key fn + sum/count into a dict (stand-in)", args.rows, aggregate)
    ipc_bytes = 0
    for chunk_rows in sorted({args.chunk, 65536}):
        def ipc_frames():
            out = []
            for batch in batches:
                for start in range(0, batch.num_rows, chunk_rows):
                    chunk = batch.slice(start, chunk_rows)
                    out.append(p.encode_sized(FrameType.SPARK_REQUEST, {"op": "rows", "fmt": p.ARROW, "start": start,
                                                                        "n": chunk.num_rows},
                                              p.to_ipc(chunk.schema, (chunk,)))[0])
            return out

        ipc = timed(results, f"Arrow, writer: IPC frames of <= {chunk_rows} rows (send_partition's)", args.rows,
                    ipc_frames)
        ipc_bytes = ipc_bytes or sum(len(frame) for frame in ipc)

        def read_only():
            return [p.decode_ipc(frame, p.decode_header(frame)[1])[1] for frame in ipc]

        timed(results, f"Arrow, member: decode_ipc only (columnar source; <= {chunk_rows} rows)", args.rows,
              read_only)
        for row_type in ("tuple", "dict"):
            def read_items():
                return [batch_to_rows(batch, row_type) for frame in ipc
                        for batch in p.decode_ipc(frame, p.decode_header(frame)[1])[1]]

            timed(results, f"Arrow, member: decode_ipc + batch_to_rows {row_type}s (<= {chunk_rows} rows)",
                  args.rows, read_items)

    items = [row for chunk in chunks for row in chunk]
    dicts = [{"key": key, "value": value} for key, value in items]
    to_row = item_to_row_fn(names)
    timed(results, "pickle path, reader task: item_to_row_fn per item", args.rows,
          lambda: [to_row(item) for item in items])
    schema = pa.schema([("key", pa.int64()), ("value", pa.float64())])
    step = 65536  # the hub joins buffered chunks up to ARROW_CHUNK_ROWS per frame
    for label, source in (("tuples", items), ("dicts", dicts)):
        timed(results, f"Arrow, sink: items_to_batches on {label} ({step}-item chunks)", args.rows,
              lambda source=source: [items_to_batches(source[start:start + step], schema)
                                     for start in range(0, len(source), step)])
    timed(results, f"Arrow, sink: RecordBatch.from_pylist on dicts ({step}-item chunks)", args.rows,
          lambda: [pa.RecordBatch.from_pylist(dicts[start:start + step], schema=schema)
                   for start in range(0, len(dicts), step)])

    print(f"rows={args.rows:,} batch={args.batch} chunk={args.chunk}; pickled {pickled_bytes / args.rows:.1f} "
          f"B/row, Arrow IPC frames {ipc_bytes / args.rows:.1f} B/row")
    print("| stage | s | rows/s |")
    print("| --- | ---: | ---: |")
    for name, seconds, rate in results:
        print(f"| {name} | {seconds:.3f} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
