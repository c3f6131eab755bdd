"""A Spark task's Arrow batches as frames: sliced when larger than a frame, joined when smaller;
and which Spark sources get the larger frames of a map_batches consumer."""

import pyarrow as pa
import pytest
from jet import Pipeline, Sinks, Sources
from jet.connectors.spark.partition_io import frame_batches
from jet.spark.job_stages import columnar_sources


def batches_of(*sizes: int, start: int = 0) -> list[pa.RecordBatch]:
    result = []
    for size in sizes:
        result.append(pa.record_batch({"id": list(range(start, start + size))}))
        start += size
    return result


@pytest.mark.parametrize("sizes, max_rows, expected", [
    ((10, 3, 7), 4, [[4], [4], [2, 2], [1, 3], [4]]),
    ((10, 3, 8), 4, [[4], [4], [2, 2], [1, 3], [4], [1]]),
    ((1000,) * 5, 65536, [[1000] * 5]),
    ((3, 0, 5), 8, [[3, 5]]),
    ((), 8, []),
])
def test_frames_hold_at_most_max_rows_and_every_row_once_in_order(sizes, max_rows, expected):
    frames = list(frame_batches(iter(batches_of(*sizes)), max_rows))
    assert [[batch.num_rows for batch in frame] for frame in frames] == expected
    ids = [value for frame in frames for batch in frame for value in batch.column(0).to_pylist()]
    assert ids == list(range(sum(sizes)))


def test_wide_rows_make_frames_of_about_max_bytes_and_every_row_once_in_order():
    text = "x" * 996  # with its 4-byte offset and the 8-byte id, 1008 bytes a row
    batches = [pa.record_batch({"id": list(range(start, start + size)), "text": [text] * size})
               for start, size in ((0, 25), (25, 40), (65, 3))]
    frames = list(frame_batches(iter(batches), max_rows=1000, max_bytes=10_100))
    sizes = [sum(batch.num_rows for batch in frame) for frame in frames]
    assert sizes == [10, 10, 10, 10, 10, 10, 8]  # 10 rows of 1008 bytes fit in 10,100
    ids = [value for frame in frames for batch in frame for value in batch.column(0).to_pylist()]
    assert ids == list(range(68))


def test_a_row_larger_than_max_bytes_travels_alone():
    batch = pa.record_batch({"text": ["y" * 5000] * 3})
    frames = list(frame_batches(iter([batch]), max_rows=100, max_bytes=1000))
    assert [[b.num_rows for b in frame] for frame in frames] == [[1], [1], [1]]


def test_only_a_spark_source_feeding_map_batches_gets_columnar_frames():
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", "/in/a")).map_batches(lambda batch: batch).write_to(Sinks.list("a"))
    pipeline.read_from(Sources.spark("parquet", "/in/b")).map(lambda row: row).write_to(Sinks.list("b"))
    names = columnar_sources(pipeline)
    assert len(names) == 1 and names == columnar_sources(pipeline.to_dag())  # the Pipeline and its DAG agree
    dag = pipeline.to_dag()
    assert all(dag.get_vertex(name).processor_supplier.columnar for name in names)
