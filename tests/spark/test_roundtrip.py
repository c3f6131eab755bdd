"""Round trips: Spark -> Jet -> Spark against Spark's own result on the same data."""

from __future__ import annotations

import random
import runpy
from pathlib import Path

from jet.connectors import Sinks, Sources
from jet.pipeline import Pipeline
from jet.pipeline.aggregate_operations import AggregateOperations

from tests.spark.harness import run_with_spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_wordcount.py"
WORDS = "the quick brown fox jumps over lazy dog jet spark stream batch".split()


def _rows(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.collect())


def test_items_in_through_spark_and_out_to_a_list(spark, tmp_path):
    path = str(tmp_path / "in.parquet")
    spark.range(0, 5000, numPartitions=3).selectExpr("id", "id * 2 as twice").write.parquet(path)
    pipeline = Pipeline.create()
    pipeline.read_from(Sources.spark("parquet", path)).write_to(Sinks.list("out"))
    results = run_with_spark(spark, pipeline, members=2)
    assert sorted(results["out"]) == [(i, 2 * i) for i in range(5000)]


def test_parquet_word_count_parquet_matches_spark(spark, tmp_path):
    rng = random.Random(7)
    lines = [(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))),) for _ in range(3000)]
    source, out = str(tmp_path / "lines.parquet"), str(tmp_path / "counts.parquet")
    spark.createDataFrame(lines, "line string").repartition(3).write.parquet(source)
    pipeline = runpy.run_path(str(EXAMPLE))["pipeline"](source, out)
    run_with_spark(spark, pipeline, members=2)
    expected = spark.sql(f"SELECT word, count(*) AS count FROM (SELECT explode(split(lower(line), ' ')) "
                         f"AS word FROM parquet.`{source}`) GROUP BY word")
    assert _rows(spark.read.parquet(out)) == _rows(expected)


def test_csv_grouped_average_json_matches_spark(spark, tmp_path):
    rng = random.Random(3)
    source, out = tmp_path / "temps.csv", str(tmp_path / "averages.json")
    source.write_text("station,temp\n" + "".join(f"s{rng.randint(1, 9)},{rng.randint(-200, 400) / 10}\n"
                                                  for _ in range(2000)))
    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark("csv", str(source), {"header": "true", "inferSchema": "true"},
                                      as_dicts=True))
     .grouping_key(lambda row: row["station"])
     .aggregate(AggregateOperations.averaging(lambda row: row["temp"]))
     .map(lambda entry: {"station": entry[0], "avg_temp": entry[1]})
     .write_to(Sinks.spark("json", out)))
    run_with_spark(spark, pipeline, members=2)
    expected = (spark.read.option("header", "true").option("inferSchema", "true").csv(str(source))
                .groupBy("station").avg("temp").collect())
    got = {row["station"]: row["avg_temp"] for row in spark.read.json(out).collect()}
    assert got.keys() == {row[0] for row in expected}
    for station, average in expected:
        assert abs(got[station] - average) < 1e-9


def test_spark_query_with_filter_and_join(spark, tmp_path):
    orders, customers = str(tmp_path / "orders.parquet"), str(tmp_path / "customers.parquet")
    spark.createDataFrame([(i, i % 50, float(i % 97)) for i in range(4000)],
                          "order_id long, customer long, amount double").write.parquet(orders)
    spark.createDataFrame([(c, f"region{c % 4}") for c in range(50)],
                          "customer long, region string").write.parquet(customers)

    def query(session):
        o = session.read.parquet(orders).filter("amount >= 10")
        c = session.read.parquet(customers)
        return o.join(c, "customer").select("region", "amount")

    pipeline = Pipeline.create()
    (pipeline.read_from(Sources.spark_query(query))
     .grouping_key(lambda row: row[0])
     .aggregate(AggregateOperations.summing(lambda row: row[1]))
     .write_to(Sinks.list("totals")))
    results = run_with_spark(spark, pipeline, members=2)
    expected = {row[0]: row[1] for row in query(spark).groupBy("region").sum("amount").collect()}
    assert dict(results["totals"]) == expected
