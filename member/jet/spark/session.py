"""The SparkSession of a job's Spark side, and what its failures say.

Shared by the batch side (:mod:`.batch_side`) and the stream side (:mod:`.stream_side`).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from jet.spark.spark_home import bytecode_spark_home

log = logging.getLogger("jet.spark")
# The source root of ``jet`` (member/), so Spark's Python workers import this checkout's code.
SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None, app_name: str = "jet"):
    """A SparkSession whose Python workers run this interpreter and can import ``jet``, with the
    ``jet`` format registered. A local session's Python workers start from bytecode
    (:mod:`jet.spark.spark_home`) and fork with ``pyspark.worker`` loaded
    (:mod:`jet.connectors.spark.worker_daemon`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if SOURCE_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([SOURCE_ROOT] + [x for x in paths if x])
    local = master.startswith("local")
    if local and "SPARK_HOME" not in os.environ:
        home = bytecode_spark_home()
        if home is not None:
            os.environ["SPARK_HOME"] = home
    from pyspark.sql import SparkSession

    from jet.connectors.spark.datasource import register

    builder = SparkSession.builder.master(master).appName(app_name).config("spark.ui.enabled", "false")
    if local:  # executors elsewhere may run an image without jet
        builder = builder.config("spark.python.daemon.module", "jet.connectors.spark.worker_daemon")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


_PY4J_CALL = re.compile(r"An error occurred while calling [\w.]+\.$")


_JVM_STACK_LINE = re.compile(r"\s+(at |\.\.\. \d+ more$|Suppressed: )")  # indented: not a message's "at least"


def spark_failure_message(error: BaseException) -> str:
    """The useful line(s) of a PySpark/Py4J exception: Spark's own message and the causes it
    names, without the JVM stack, suppressed exceptions or Py4J's "error occurred while calling"."""
    text = getattr(error, "getMessage", None)
    message = text() if callable(text) else str(error)
    lines = [line for line in str(message).splitlines() if line.strip() and not _JVM_STACK_LINE.match(line)]
    if lines and _PY4J_CALL.fullmatch(lines[0].strip()):  # a Py4JJavaError: the Java exception follows
        lines = lines[1:]
        if lines:
            lines[0] = lines[0].removeprefix(": ")
    return "\n".join(lines[:12]) or type(error).__name__


def activate(spark: Any) -> None:
    """Make ``spark`` the JVM's active session on this thread (py4j pins a JVM thread per Python
    thread, and a Python data source is looked up in the active session)."""
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
