"""End to end with Spark: the operator under Kopf against the API emulator, the member pods and
the Spark driver pods it creates run as real processes by the kubelet stand-in (``kubelet.py``;
Spark in local mode inside each driver process), Parquet in and out through Spark.

The expected output is computed by PySpark alone over the same input files.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.operator.emulator import Emulator
from tests.operator.fakes import JETJOBS, PODS, STATEFULSETS, eventually, get, names
from tests.operator.kubelet import Kubelet
from tests.operator.test_end_to_end import in_order, kubelet, phases_seen, start_operator_for  # noqa: F401
from tests.operator.test_operator import COLLECTION, jetjob, status
from tests.spark.conftest import spark  # noqa: F401 - the session's one SparkSession

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DRIVERS = ("spark-source", "spark-sink")
LINES = [
    "It was the best of times, it was the worst of times,",
    "it was the age of wisdom, it was the age of foolishness,",
    "it was the epoch of belief, it was the epoch of incredulity,",
    "it was the season of Light, it was the season of Darkness,",
    "it was the spring of hope, it was the winter of despair.",
]
OUTPUT_SCHEMA = "word string, count long"


def wordcount_code(source: Path, out: Path, mode: str) -> str:
    """A pipeline file: Parquet lines in through Spark, word counts out through Spark."""
    return textwrap.dedent(f"""
        import re

        from jet import AggregateOperations, Pipeline, Sinks, Sources

        WORD = re.compile(r"[a-z']+")


        def pipeline():
            p = Pipeline.create()
            (p.read_from(Sources.spark("parquet", {str(source)!r}))
              .flat_map(lambda row: WORD.findall(row[0].lower()))
              .grouping_key(lambda word: word)
              .aggregate(AggregateOperations.counting())
              .write_to(Sinks.spark("parquet", {str(out)!r}, mode={mode!r}, schema={OUTPUT_SCHEMA!r})))
            return p
    """).lstrip()


def write_lines(spark: Any, path: Path, copies: int) -> None:
    """Parquet files of one string column ``line`` (several files, so several Spark partitions),
    made in Spark SQL (no Python workers to start)."""
    values = ", ".join(f"('{line}')" for line in LINES)
    frame = spark.sql(f"SELECT concat(t.line, ' line ', r.id) AS line FROM range({copies}) AS r "
                      f"CROSS JOIN (VALUES {values}) AS t(line)")
    frame.repartition(3).write.parquet(str(path))


def spark_wordcount(spark: Any, path: Path) -> dict[str, int]:
    """The oracle: the word counts of the Parquet lines at ``path``, by Spark SQL alone."""
    from pyspark.sql import functions as F

    words = spark.read.parquet(str(path)).select(
        F.explode(F.split(F.lower("line"), "[^a-z']+")).alias("word"))
    counts = words.where(F.col("word") != "").groupBy("word").count().collect()
    return {row["word"]: row["count"] for row in counts}


def spark_jetjob(name: str, code: str) -> dict[str, Any]:
    return jetjob(name, pipeline={"code": code}, ttlSecondsAfterFinished=0,
                  spark={"executor": {"instances": 2, "cores": 1}})


def member_pods(k8s: Emulator) -> set[str]:
    return {pod for pod in names(k8s, PODS) if "-member-" in pod}


async def wait_finished(k8s: Emulator, name: str) -> dict[str, Any]:
    """The JetJob's status once it is Completed or Failed."""
    await eventually(lambda: status(k8s, name).get("phase") in ("Completed", "Failed"), 240,
                     what=f"{name} Completed or Failed (now {status(k8s, name).get('message')})")
    return status(k8s, name)


async def test_parquet_through_spark_runs_pending_running_completed(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spark: Any) -> None:
    source, out = tmp_path / "lines.parquet", tmp_path / "counts.parquet"
    write_lines(spark, source, copies=40)
    expected = spark_wordcount(spark, source)
    assert len(expected) > 20 and "times" in expected
    with start_operator_for(kubelet, monkeypatch, "sparkwc"):
        response = await k8s.post(COLLECTION, json=spark_jetjob("sparkwc", wordcount_code(source, out, "overwrite")))
        assert response.status in (200, 201), await response.text()
        completed = await wait_finished(k8s, "sparkwc")
        assert (completed["phase"], completed["message"]) == ("Completed", "the job completed"), kubelet.logs()
        seen = phases_seen(k8s, "sparkwc")
        assert in_order(seen, ["Pending", "Running", "Completed"]), seen

        job_id = completed["jobId"]
        for component in DRIVERS:
            pod = get(k8s, PODS, f"sparkwc-{component}")
            assert pod["status"]["phase"] == "Succeeded", kubelet.logs()
            args = pod["spec"]["containers"][0]["args"]
            assert args[0] == component and args[args.index("--job-id") + 1] == job_id
        counts = {row["word"]: row["count"] for row in spark.read.parquet(str(out)).collect()}
        assert counts == expected, kubelet.logs()
        await eventually(lambda: get(k8s, STATEFULSETS, "sparkwc-member")["spec"]["replicas"] == 0,
                         what="members scaled to 0")
        await eventually(lambda: not member_pods(k8s), what="member pods deleted")


async def test_a_failing_spark_driver_fails_the_jetjob_with_its_error(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spark: Any) -> None:
    source, out = tmp_path / "lines.parquet", tmp_path / "counts.parquet"
    write_lines(spark, source, copies=2)
    write_lines(spark, out, copies=1)  # the sink refuses to overwrite it: the sink driver fails
    with start_operator_for(kubelet, monkeypatch, "sparkbad"):
        response = await k8s.post(COLLECTION, json=spark_jetjob("sparkbad", wordcount_code(source, out, "errorifexists")))
        assert response.status in (200, 201), await response.text()
        failed = await wait_finished(k8s, "sparkbad")
        message = failed["message"]
        assert failed["phase"] == "Failed", kubelet.logs()
        assert message.startswith("pod sparkbad-spark-sink failed (exit code 1): "), message
        assert "spark-sink failed" in message and "PATH_ALREADY_EXISTS" in message, message
        assert in_order(phases_seen(k8s, "sparkbad"), ["Pending", "Running", "Failed"]), phases_seen(k8s, "sparkbad")
        await eventually(lambda: not member_pods(k8s), what="member pods deleted")
        await eventually(lambda: get(k8s, PODS, "sparkbad-spark-source") is None, what="drivers deleted")
        assert status(k8s, "sparkbad")["phase"] == "Failed"
        assert get(k8s, JETJOBS, "sparkbad") is not None
