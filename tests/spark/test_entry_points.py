"""``jet spark-sink`` as a separate Spark driver process (``spark-source`` shares its code)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.harness import JOB_ID, TOKEN, run_with_spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "spark_wordcount.py"


@pytest.mark.slow
def test_the_example_through_the_two_driver_commands(spark, tmp_path):
    from jet.spark.job_stages import load_pipeline
    from jet.spark.runner import run_spark_side
    source, out = str(tmp_path / "lines.txt"), str(tmp_path / "counts.parquet")
    Path(source).write_text("to be or not to be\nthat is the question\n" * 200)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    pipeline = load_pipeline(str(EXAMPLE), "pipeline", (source, out))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "member"), str(ROOT)])}

    def drivers(_spark, _pipeline, addresses):
        common = ["--pipeline", str(EXAMPLE), "--members", ",".join(addresses), "--token-file",
                  str(token_file), "--job-id", JOB_ID, "--master", "local[1]",
                  "--conf", "spark.sql.shuffle.partitions=2", "--", source, out]
        # the sink's driver is a process of its own; the source's runs in this test's session
        # (one more JVM on a two-core machine costs a minute)
        proc = subprocess.Popen([sys.executable, "-m", "jet.cli", "--log-level", "WARNING", "spark-sink"]
                                + common, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            run_spark_side(_spark, _pipeline, addresses, TOKEN, JOB_ID, sinks=False)
        finally:
            output, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, output[-3000:]

    run_with_spark(spark, pipeline, members=2, timeout=180, spark_side=drivers)
    counts = {row["word"]: row["count"] for row in spark.read.parquet(out).collect()}
    assert counts == {"to": 400, "be": 400, "or": 200, "not": 200, "that": 200, "is": 200,
                      "the": 200, "question": 200}
