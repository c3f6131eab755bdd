"""Spark's Python worker daemon, with the task worker's modules loaded before it forks.

``pyspark.daemon`` forks one process per Python task worker and each fork imports
``pyspark.worker`` again (the daemon imports it only after forking, in case importing it starts
threads). ``pyspark.worker`` starts none (it imports neither pyarrow nor pandas), so this module
imports it once in the daemon, then runs ``pyspark.daemon`` unchanged: every forked worker
starts with it loaded. :func:`jet.spark.session.spark_session` sets
``spark.python.daemon.module`` to this module.
"""

from __future__ import annotations

import runpy

import pyspark.worker  # noqa: F401  (loaded for the forks)

if __name__ == "__main__":
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
