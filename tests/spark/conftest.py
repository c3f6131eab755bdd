"""One SparkSession for the whole test session (starting one takes seconds)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.system_packages import require_program

_session: Any = None


def shared_spark_session() -> Any:
    """The test session's SparkSession, started on first use."""
    global _session
    if _session is None:
        from jet.spark.session import spark_session

        # 4 slots: a job's 2 sink readers (2 members) keep theirs and the writers share the rest
        _session = spark_session("local[4,4]", {"spark.sql.shuffle.partitions": "4",
                                              "spark.default.parallelism": "4",
                                              "spark.task.maxFailures": "4",
                                              "spark.driver.memory": "2g"}, "jet-tests")
        # Tests fail Spark tasks on purpose; each failure logged its Java stack at ERROR, about
        # 1,500 lines a run that made a passing run read as alarming. The tests assert what fails.
        _session.sparkContext.setLogLevel("FATAL")
    return _session


def stop_shared_spark_session() -> None:
    """Stop the session if one was started (at the end of the test session)."""
    global _session
    if _session is not None:
        _session.stop()
        _session = None


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    require_program("java", "openjdk-17-jre-headless")
    return shared_spark_session()


@pytest.fixture(autouse=True)
def forget_failed_jobs():
    """A failed job's Spark vertices are remembered as ended (per process, by job id): clear
    that after every test, so a later test running a job of the same id does not see it."""
    yield
    from jet.connectors.spark import hub as spark_hub

    with spark_hub._REGISTRY_LOCK:
        spark_hub._ENDED.clear()
