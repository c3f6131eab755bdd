"""Spark -> Jet aggregation -> Spark against the same aggregation in PySpark alone.

    python bench/spark_bench.py [--rows 10000000] [--members 2] [--keys 1000]
                                [--only spark,jet,batches,floor,rdd,pandas] [--repeat 1]

Writes a Parquet dataset of ``rows`` rows (key long, value double) once, then in one run:
1. PySpark alone: read Parquet, group by key, sum and count, write Parquet;
2. Spark -> Jet -> Spark: Spark reads the Parquet and streams it into a job on ``members``
   member processes of ``jet.local_cluster`` (started before the clock, as the SparkSession
   is; ``--in-process`` runs them in this process instead), Jet groups and aggregates, Spark
   reads the job's sink and writes Parquet. The key and the summed value are getters of the
   row's columns, so the aggregation folds Spark's Arrow batches whole, in Arrow
   (jet.core.batch_fold);
2b. the same with a value function that is no plain getter (``--only ...,rowfn``): every row
   becomes a tuple and goes through the Python functions, as RDD's rows do;
3. Spark -> Jet ``map_batches`` -> Spark (``--only ...,batches``): Spark's Arrow batches go whole into a
   ``map_batches`` stage that groups each batch with pyarrow (partial sums and counts per key),
   then Jet groups the partials by key and sums them;
4. the floor of any Python path (``floor``): Spark moves the rows into Python workers with a
   ``mapInArrow`` that only counts them, in as many tasks as the Jet writes get;
5. PySpark running the same Python functions, RDD API: ``rdd.map(key, (value, 1))
   .reduceByKey(add pairs)``, written as Parquet;
6. PySpark running Python per group, pandas UDF: ``groupBy("key").applyInPandas(sum, count)``.
All share one SparkSession (``local[N]``, N = cores or readers + 2, whichever is more, so the
job's sink readers and the source writers never wait for each other's task slots) and check
they produced the same groups. ``--repeat N`` runs each contender N times and prints its first
run (what is cold, the JVM's JIT and the Python workers' imports, weighs on whichever contender
comes first) and its best. ``--only`` picks contenders (PySpark alone always runs: it is
the reference for the check). To profile the Jet run, start it with ``--only spark,jet`` and
attach ``py-spy record --subprocesses --pid <pid>`` (see bench/README.md).

``--fresh`` runs each contender once in a process of its own instead, with a SparkSession of its
own (a new JVM, new Python workers) that has run only the PySpark-alone reference: what a user
meets who runs that one job, each contender paying the JIT of its own path (in one session, the
first contender that moves Arrow batches into Python pays that path's JIT for every later one).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member"), str(ROOT)]

from jet.connectors import Sinks, Sources  # noqa: E402
from jet.pipeline import Pipeline  # noqa: E402
from jet.pipeline.aggregate_operations import AggregateOperations  # noqa: E402
from jet.spark.session import spark_session  # noqa: E402

from tests.spark.harness import run_with_spark  # noqa: E402


def partial_group_by(batch):
    """The sum and count of each key's values in one batch, with pyarrow (columns by position:
    rows made into batches come as _1, _2)."""
    import pyarrow as pa

    named = batch.rename_columns(["key", "value"])
    return pa.Table.from_batches([named]).group_by("key").aggregate([("value", "sum"), ("value", "count")])


def _same_batches(batches):
    yield from batches


def _count_rows(batches):
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"n": [sum(batch.num_rows for batch in batches)]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--only", default="spark,jet,rowfn,batches,floor,rdd,pandas")
    parser.add_argument("--in-process", action="store_true",
                        help="run the members in this process (tests/spark/harness.py) instead of as"
                             " member processes of jet.local_cluster, as jet run does")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each contender this many times and print its first and best run")
    parser.add_argument("--cold", action="store_true",
                        help="no warm-up of the session's Python workers: the first contender using"
                             " them pays their start (as a fresh `jet run` or PySpark job does)")
    parser.add_argument("--fresh", action="store_true",
                        help="run each contender once in a fresh process and SparkSession of its own")
    args = parser.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="jet-spark-bench-"))
    if args.fresh:
        run_fresh(args, work)
        return
    slots = max(os.cpu_count() or 1, args.members + 2)  # one sink reader per member, plus writers
    spark = spark_session(f"local[{slots}]", {"spark.sql.shuffle.partitions": "8", "spark.driver.memory": "4g"},
                          "jet-spark-bench")
    source = str(work / f"input-{args.rows}.parquet")
    if not os.path.exists(source):
        started = time.perf_counter()
        (spark.range(0, args.rows, numPartitions=8)
         .selectExpr(f"id % {args.keys} AS key", "CAST(id % 1000 AS DOUBLE) / 10 AS value")
         .write.parquet(source))
        print(f"wrote {args.rows:,} rows to {source} in {time.perf_counter() - started:.1f} s")
    spark_out = str(work / "spark-out")
    spark.read.parquet(source).limit(10).collect()  # warm the session up for every contender
    if not args.cold:  # and its Python workers, Arrow path included (about 3 s the first time)
        spark.range(8, numPartitions=2).mapInArrow(_same_batches, "id long").collect()
        spark.sparkContext.parallelize(range(8), 2).map(lambda x: x).collect()

    from pyspark.sql import functions as F

    timings: dict[str, list[float]] = {}
    outputs: dict[str, str] = {}

    def measure(name: str, out: str | None, run) -> None:
        """``run()`` ``--repeat`` times (into a fresh ``out``), each timed."""
        for _ in range(args.repeat):
            if out is not None:
                shutil.rmtree(out, ignore_errors=True)
            started = time.perf_counter()
            run()
            timings.setdefault(name, []).append(time.perf_counter() - started)

    measure("PySpark alone (DataFrame groupBy)", spark_out, lambda: (
        spark.read.parquet(source).groupBy("key")
        .agg(F.sum("value").alias("total"), F.count("*").alias("count")).write.parquet(spark_out)))

    only = set(args.only.split(","))
    cluster = None
    if not args.in_process and only & {"jet", "rowfn", "batches"}:
        import jet

        cluster = jet.local_cluster(members=args.members)  # started before the clock, like Spark's session

    def run_jet(pipeline: Pipeline) -> None:
        if cluster is None:
            run_with_spark(spark, pipeline, members=args.members, timeout=3600)
        else:
            cluster.new_job(pipeline).join(3600)

    def grouped_sum(value_fn, out: str) -> Pipeline:
        pipeline = Pipeline.create()
        (pipeline.read_from(Sources.spark("parquet", source))
         .grouping_key(lambda row: row[0])
         .aggregate(AggregateOperations.all_of(AggregateOperations.summing(value_fn),
                                               AggregateOperations.counting()))
         .map(lambda entry: (entry[0], entry[1][0], entry[1][1]))
         .write_to(Sinks.spark("parquet", out, schema="key long, total double, count long")))
        return pipeline

    if "jet" in only:  # getters of columns: the aggregation folds Spark's batches in Arrow
        jet_out = str(work / "jet-out")
        pipeline = grouped_sum(lambda row: row[1], jet_out)
        print(f"Jet run starting (pid {os.getpid()})", flush=True)
        measure(f"Spark -> Jet ({args.members} members) -> Spark", jet_out, lambda: run_jet(pipeline))
        outputs["jet"] = jet_out
    if "rowfn" in only:  # a value function that is no plain getter: a Python call per row
        rowfn_out = str(work / "rowfn-out")
        rowfn_pipeline = grouped_sum(lambda row: row[1] + 0.0, rowfn_out)
        measure(f"Spark -> Jet, rows through Python functions ({args.members} members) -> Spark", rowfn_out,
                lambda: run_jet(rowfn_pipeline))
        outputs["rowfn"] = rowfn_out
    if "batches" in only:
        batches_out = str(work / "batches-out")
        pipeline = Pipeline.create()
        (pipeline.read_from(Sources.spark("parquet", source))
         .map_batches(partial_group_by)
         .grouping_key(lambda row: row[0])
         .aggregate(AggregateOperations.all_of(AggregateOperations.summing(lambda row: row[1]),
                                               AggregateOperations.summing(lambda row: row[2])))
         .map(lambda entry: (entry[0], entry[1][0], entry[1][1]))
         .write_to(Sinks.spark("parquet", batches_out, schema="key long, total double, count long")))
        measure(f"Spark -> Jet map_batches ({args.members} members) -> Spark", batches_out,
                lambda: run_jet(pipeline))
        outputs["jet-batches"] = batches_out
    if "floor" in only:  # Spark moving the rows into Python workers that only count them
        def count_in_python_workers() -> None:
            frame = spark.read.parquet(source).coalesce(max(1, slots - args.members))  # as the Jet writes
            counted = sum(row[0] for row in frame.mapInArrow(_count_rows, "n long").collect())
            assert counted == args.rows, counted

        measure("Spark -> Python workers, mapInArrow counting rows (floor)", None, count_in_python_workers)
    if "rdd" in only:
        rdd_out = str(work / "rdd-out")
        measure("PySpark RDD map/reduceByKey (Python functions)", rdd_out, lambda: (
            spark.read.parquet(source).rdd
            .map(lambda row: (row[0], (row[1], 1)))
            .reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]))
            .map(lambda entry: (entry[0], entry[1][0], entry[1][1]))
            .toDF("key long, total double, count long").write.parquet(rdd_out)))
        outputs["rdd"] = rdd_out
    if "pandas" in only:
        import pandas as pd

        def group_sum(frame: "pd.DataFrame") -> "pd.DataFrame":
            return pd.DataFrame({"key": [frame["key"].iloc[0]], "total": [frame["value"].sum()],
                                 "count": [len(frame)]})

        pandas_out = str(work / "pandas-out")
        measure("PySpark groupBy.applyInPandas (pandas UDF)", pandas_out, lambda: (
            spark.read.parquet(source).groupBy("key")
            .applyInPandas(group_sum, schema="key long, total double, count long").write.parquet(pandas_out)))
        outputs["pandas"] = pandas_out

    if cluster is not None:
        cluster.close()
    where = "in this process" if args.in_process else "member processes"
    print(f"rows={args.rows:,} keys={args.keys} members={args.members} ({where}) cores={os.cpu_count()}")
    for name, runs in timings.items():
        if args.repeat == 1:
            print(f"| {name} | {runs[0]:.1f} s | {args.rows / runs[0]:,.0f} |")
        else:  # the first run pays what is cold (JIT, workers' imports); the best is the steady state
            best = min(runs)
            print(f"| {name} | {runs[0]:.1f} s | {best:.1f} s | {args.rows / best:,.0f} |")
    expected = {r[0]: (r[1], r[2]) for r in spark.read.parquet(spark_out).collect()}
    for name, path in outputs.items():
        got = {r[0]: (r[1], r[2]) for r in spark.read.parquet(path).collect()}
        assert got.keys() == expected.keys(), f"{name} and Spark found different keys"
        for key, (total, count) in expected.items():  # float sums differ in the last bits by order
            assert got[key][1] == count and abs(got[key][0] - total) <= 1e-9 * max(1.0, abs(total)), (name, key)
    print("all contenders produced the same groups")
    spark.stop()


CONTENDERS = ("jet", "rowfn", "batches", "floor", "rdd", "pandas")
_TIMING_ROW = re.compile(r"^\| (.+) \| ([0-9.]+) s \| [0-9,]+ \|$")


def run_fresh(args: argparse.Namespace, work: Path) -> None:
    """Each contender of ``--only`` in a process of its own (this script, ``--repeat 1``), all
    reading the same Parquet input in ``work``; prints each one's time and PySpark alone's in
    its process."""
    only = [c for c in args.only.split(",") if c in CONTENDERS]
    rows: list[tuple[str, float, float]] = []
    for contender in only:
        command = [sys.executable, __file__, "--only", f"spark,{contender}", "--rows", str(args.rows),
                   "--members", str(args.members), "--keys", str(args.keys), "--dir", str(work)]
        if args.in_process:
            command.append("--in-process")
        if args.cold:
            command.append("--cold")
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        timings = [(m.group(1), float(m.group(2))) for m in map(_TIMING_ROW.match, out.splitlines()) if m]
        if len(timings) != 2 or "all contenders produced the same groups" not in out:
            raise RuntimeError(f"{contender}: unexpected output of {' '.join(command)}:\n{out}")
        (_, reference), (name, seconds) = timings
        rows.append((name, seconds, reference))
    print(f"rows={args.rows:,} keys={args.keys} members={args.members} cores={os.cpu_count()}, "
          f"each contender in a fresh process and SparkSession")
    print("| contender | its run | PySpark alone before it | rows/s |")
    for name, seconds, reference in rows:
        print(f"| {name} | {seconds:.1f} s | {reference:.1f} s | {args.rows / seconds:,.0f} |")


if __name__ == "__main__":
    main()
