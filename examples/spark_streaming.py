"""Spark Structured Streaming on both sides of a stream job: CSV files in, Parquet out.

    jet run examples/spark_streaming.py [IN_DIR [OUT [CHECKPOINTS [follow]]]]

Spark streams the CSV files of IN_DIR (``key,ts,value`` rows, ``ts`` in epoch ms) into the job,
one file per micro-batch; Jet counts the readings per key in 1 s tumbling windows of event
time; Spark streams the (key, window_start, window_end, count) rows into Parquet at OUT. By
default the Spark source reads the files that are there and ends (``available_now``): the
windows flush and the job completes. With ``follow`` it keeps watching IN_DIR for new files
(write them whole, e.g. by renaming into the directory) until you stop the job (Ctrl-C).

IN_DIR defaults to examples/data/readings, OUT to out/spark_streaming.parquet; CHECKPOINTS
(Spark's checkpoint of the Parquet query) to a temporary directory. A streaming query appends
to OUT and skips micro-batches OUT's log already has, so remove OUT before running it again
(the job refuses to start otherwise). On Kubernetes the operator runs the two Spark sides as
long-lived driver pods (``jet spark-source`` / ``jet spark-sink``).
"""

from jet import AggregateOperations, Pipeline, Sinks, Sources, WindowDefinition

IN_SCHEMA = "key string, ts long, value long"
OUT_SCHEMA = "key string, window_start long, window_end long, count long"


def pipeline(source="examples/data/readings", out="out/spark_streaming.parquet", checkpoints=None, mode="once"):
    p = Pipeline.create()
    (p.read_from(Sources.spark_stream("csv", source, schema=IN_SCHEMA, maxFilesPerTrigger=1,
                                      available_now=mode != "follow"))
     .with_timestamps(lambda row: row[1], allowed_lag_ms=1500)
     .grouping_key(lambda row: row[0])
     .window(WindowDefinition.tumbling(1000))
     .aggregate(AggregateOperations.counting())
     .map(lambda result: (result.key, result.start, result.end, result.result))
     .write_to(Sinks.spark_stream("parquet", out, checkpoints, schema=OUT_SCHEMA)))
    return p
