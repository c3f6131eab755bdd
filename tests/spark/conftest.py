"""One SparkSession for the whole test session (starting one takes seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from jet.connectors.spark.driver import spark_session

    # 4 slots: a job's 2 sink readers (2 members) keep theirs and the writers share the rest
    session = spark_session("local[4,4]", {"spark.sql.shuffle.partitions": "4",
                                         "spark.default.parallelism": "4",
                                         "spark.task.maxFailures": "4",
                                         "spark.driver.memory": "2g"}, "jet-tests")
    yield session
    session.stop()
