"""The same word count with PySpark in local[2]: the DataFrame API or the RDD API."""

import os
import sys
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession, functions as F  # noqa: E402


def main(path, api):
    started = time.perf_counter()
    spark = (SparkSession.builder.master("local[2]").appName("wordcount")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    ready = time.perf_counter()
    if api == "dataframe":
        words = (spark.read.text(path)
                 .select(F.explode(F.split(F.lower(F.col("value")), r"\s+")).alias("word"))
                 .where(F.col("word") != ""))
        counts = words.groupBy("word").count().collect()
        total = sum(row["count"] for row in counts)
    else:
        counts = (spark.sparkContext.textFile(path).flatMap(lambda line: line.lower().split())
                  .map(lambda word: (word, 1)).reduceByKey(lambda a, b: a + b).collect())
        total = sum(n for _, n in counts)
    done = time.perf_counter()
    print(f"words={total} distinct={len(counts)} seconds={done - ready:.3f} startup={ready - started:.3f}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
