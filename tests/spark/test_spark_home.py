"""The local sessions' SPARK_HOME: Spark's own jars and scripts, PySpark from bytecode."""

from __future__ import annotations

import os

import pytest
from jet.spark.spark_home import ZIP_DIRECTORY, bytecode_spark_home, installed_pyspark

pyspark = pytest.importorskip("pyspark")


def test_links_everything_but_the_zips(tmp_path):
    package = installed_pyspark()
    if package is None:
        pytest.skip("PySpark is not a pip install with its own jars")
    home = bytecode_spark_home(str(tmp_path))
    assert home is not None and os.path.dirname(home) == str(tmp_path)
    expected = sorted(set(os.listdir(package)) - {ZIP_DIRECTORY, "__pycache__"})
    assert sorted(os.listdir(home)) == expected
    assert os.path.realpath(os.path.join(home, "jars")) == os.path.realpath(os.path.join(package, "jars"))
    assert not os.path.exists(os.path.join(home, "python", "lib", "pyspark.zip"))
    assert bytecode_spark_home(str(tmp_path)) == home  # built once
    assert len(os.listdir(tmp_path)) == 1


def test_refuses_a_directory_others_can_write(tmp_path):
    if installed_pyspark() is None:
        pytest.skip("PySpark is not a pip install with its own jars")
    home = bytecode_spark_home(str(tmp_path))
    os.chmod(home, 0o777)
    assert bytecode_spark_home(str(tmp_path)) is None


def test_python_workers_import_the_installed_pyspark(spark):
    """What the session's Python workers import PySpark from: a file, not Spark's zip."""
    if installed_pyspark() is None:
        pytest.skip("PySpark is not a pip install with its own jars")

    def where(_):
        import pyspark as worker_pyspark
        yield worker_pyspark.__file__

    files = set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect())
    assert files == {pyspark.__file__}
