"""The embedded local runner: a local cluster whose jobs also get their Spark side.

``jet.local_cluster`` and ``jet run`` use it. It sits above the cluster and the connectors (the
cluster layer does not know Spark): a job with Spark sources or sinks gets them run in a local
SparkSession (``local[*]``, started once per process) next to the job. Spark *stream* stages
run as streaming queries for as long as the job runs, and stop when it ends or is cancelled.

The members share a snapshot store: ``snapshot_store=`` (a directory or URL) or, by default, a
directory this cluster creates and removes when it closes (``keep_snapshot_store=True`` keeps it).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from typing import Any, Mapping

from jet.cluster.client import Job, as_dag
from jet.cluster.local.local_cluster import LocalCluster as _MembersOnly
from jet.execution.errors import JobTimeoutError
from jet.spark.batch_side import job_ended
from jet.spark.runner import start_spark_side
from jet.spark.stream_side import stop_spark_streams

SPARK_SIDE_GRACE_S = 10.0
"""How long a failed job's ``join`` waits for its Spark side to end."""


class LocalJob:
    """A cluster job and the thread running its Spark side; joins both, and stops the Spark
    side's streaming queries once the job has ended (or is cancelled)."""

    def __init__(self, job: Job, spark_side: threading.Thread) -> None:
        self._job = job
        self._spark_side = spark_side

    def join(self, timeout: float | None = None) -> None:
        try:
            self._job.join(timeout)
        except JobTimeoutError:
            raise  # still running: so are its streams
        except BaseException:
            stop_spark_streams(self._job.id)
            # A failed job leaves Spark's tasks failing on their own (at INFO: the job's failure is
            # the error); let Spark finish them before this process may exit under it, or Spark
            # logs errors and stacks of its own about a vanished driver.
            job_ended(self._job.id)
            self._spark_side.join(SPARK_SIDE_GRACE_S)
            raise
        stop_spark_streams(self._job.id)
        self._spark_side.join(timeout)  # Spark sinks finish writing after the job
        if self._spark_side.is_alive():
            raise JobTimeoutError(f"the Spark side of job {self._job.name} did not finish within"
                                  f" {timeout} s", [self._spark_side.name])

    def cancel(self) -> None:
        """Cancel the job; its Spark streaming queries stop."""
        self._job.cancel()
        stop_spark_streams(self._job.id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._job, name)

    def __repr__(self) -> str:
        return f"LocalJob({self._job!r})"


class LocalCluster(_MembersOnly):
    """Member processes on this machine; jobs with Spark stages get their Spark side too."""

    def __init__(self, members: int = 2, threads: int | None = None, *, keep_snapshot_store: bool = False,
                 **settings: Any) -> None:
        self._own_store = None
        if "snapshot_store" not in settings:
            self._own_store = tempfile.mkdtemp(prefix="jet-snapshots-")
            settings["snapshot_store"] = self._own_store
        self.snapshot_store = settings["snapshot_store"]
        """Where the members keep job records and snapshots (None: nowhere)."""
        self._keep_store = keep_snapshot_store
        super().__init__(members, threads, **settings)

    def close(self, wait: bool = True) -> None:
        super().close(wait)
        if self._own_store is not None and wait and not self._keep_store:
            shutil.rmtree(self._own_store, ignore_errors=True)
            self._own_store = None

    def new_job(self, job: Any, config: Mapping[str, Any] | None = None) -> Job | LocalJob:
        dag = as_dag(job)
        submitted = super().new_job(dag, config)
        spark_side = start_spark_side(dag, self.addresses, self.token, submitted.id)
        return submitted if spark_side is None else LocalJob(submitted, spark_side)


def local_cluster(members: int = 2, threads: int | None = None, **settings: Any) -> LocalCluster:
    """Start ``members`` member processes here and wait until all are connected; use it as a
    context manager. ``threads``: cooperative threads per member."""
    return LocalCluster(members, threads, **settings)
