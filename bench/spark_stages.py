"""Time each per-row stage of the Spark -> Jet -> Spark path in isolation, one process.

    PYTHONPATH=member python3 bench/spark_stages.py [--rows 1000000] [--batch 10000] [--repeat 5]

Builds ``rows`` rows (key long, value double) as Arrow record batches of ``batch`` rows (what
Spark's ``DataSourceArrowWriter`` hands a writer task: ``spark.sql.execution.arrow.
maxRecordsPerBatch`` = 10,000), then times, with the project's own functions where they exist:

- writer today: ``column.to_pylist()`` per column + ``columns_to_items`` (tuples), then
  ``pickle.dumps`` of 4096-row chunks (``protocol.encode_sized``);
- member today: ``pickle.loads`` of those chunks (``protocol.decode_payload``);
- member, per-row Python of the bench's job: key function, the ``all_of(summing, counting)``
  accumulate through a dict (a stand-in for the keyed aggregation, not the engine's code);
- the Arrow IPC alternative: writer ``RecordBatchStreamWriter`` per batch, member
  ``open_stream(...).read_next_batch()`` + ``to_pylist``/zip to tuples, or ``to_numpy().tolist()``;
- sink side today: ``item_to_row_fn`` per output item, and the Arrow alternative
  ``RecordBatch.from_arrays`` from the items.
Prints seconds and rows/s per stage. Single thread, no network: an upper bound on what each
stage costs the pipeline. Each stage runs ``--repeat`` times (default 5); the fastest counts.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

import pyarrow as pa  # noqa: E402

from jet.connectors.spark import protocol as p  # noqa: E402
from jet.connectors.spark.schema import columns_to_items, item_to_row_fn  # noqa: E402
from jet.cluster.packets import FrameType  # noqa: E402


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
        out = []
        for batch in batches:
            out.append(columns_to_items([c.to_pylist() for c in batch.columns], names, "tuple"))
        return out

    tuple_batches = timed(results, "writer: Arrow batch -> tuples (to_pylist + zip)", args.rows, to_tuples)

    def pickle_chunks():
        frames = []
        for rows in tuple_batches:
            for start in range(0, len(rows), args.chunk):
                frames.append(p.encode_sized(FrameType.SPARK_REQUEST, {"op": "rows", "start": start,
                                                                       "n": args.chunk},
                                             rows[start:start + args.chunk])[0])
        return frames

    frames = timed(results, f"writer: pickle {args.chunk}-row chunks (encode_sized)", args.rows, pickle_chunks)
    pickled_bytes = sum(len(f) for f in frames)

    def unpickle():
        out = []
        for frame in frames:
            header, offset = p.decode_header(frame)
            out.append(p.decode_payload(frame, offset))
        return out

    chunks = timed(results, "member: unpickle chunks (decode_payload)", args.rows, unpickle)

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

    def ipc_write():
        out = []
        for batch in batches:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            out.append(sink.getvalue().to_pybytes())
        return out

    ipc = timed(results, "writer (Arrow): IPC stream bytes per batch", args.rows, ipc_write)
    ipc_bytes = sum(len(b) for b in ipc)

    def ipc_read_tuples():
        out = []
        for blob in ipc:
            batch = pa.ipc.open_stream(blob).read_next_batch()
            out.append(list(zip(*[c.to_pylist() for c in batch.columns])))
        return out

    timed(results, "member (Arrow): IPC read + to_pylist + zip", args.rows, ipc_read_tuples)

    def ipc_read_numpy():
        out = []
        for blob in ipc:
            batch = pa.ipc.open_stream(blob).read_next_batch()
            out.append(list(zip(*[c.to_numpy().tolist() for c in batch.columns])))
        return out

    timed(results, "member (Arrow): IPC read + to_numpy().tolist() + zip", args.rows, ipc_read_numpy)

    def ipc_read_only():
        return [pa.ipc.open_stream(blob).read_next_batch() for blob in ipc]

    timed(results, "member (Arrow): IPC read only (zero copy, batch stays columnar)", args.rows, ipc_read_only)

    items = [row for chunk in chunks for row in chunk]
    to_row = item_to_row_fn(names)
    timed(results, "sink today: item_to_row_fn per item (reader yields tuples)", args.rows,
          lambda: [to_row(item) for item in items])
    schema = pa.schema([("key", pa.int64()), ("value", pa.float64())])

    def items_to_arrow():
        out = []
        for start in range(0, len(items), args.batch):
            part = items[start:start + args.batch]
            columns = list(zip(*part))
            out.append(pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)],
                                                  schema=schema))
        return out

    timed(results, "sink (Arrow): items -> RecordBatch (zip + pa.array on tuples)", args.rows, items_to_arrow)

    def items_to_arrow_lists():  # pa.array takes a tuple through a much slower path than a list
        out = []
        for start in range(0, len(items), args.batch):
            columns = [list(c) for c in zip(*items[start:start + args.batch])]
            out.append(pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)],
                                                  schema=schema))
        return out

    timed(results, "sink (Arrow): items -> RecordBatch (zip + list + pa.array)", args.rows, items_to_arrow_lists)

    print(f"rows={args.rows:,} batch={args.batch} chunk={args.chunk}; pickled {pickled_bytes / args.rows:.1f} "
          f"B/row, Arrow IPC {ipc_bytes / args.rows:.1f} B/row")
    print("| stage | s | rows/s |")
    print("| --- | ---: | ---: |")
    for name, seconds, rate in results:
        print(f"| {name} | {seconds:.3f} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
