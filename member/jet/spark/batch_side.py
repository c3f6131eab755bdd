"""The batch side of a job's Spark stages (``jet spark-source`` and ``jet spark-sink`` drivers).

A Spark source stage's DataFrame is built and written with format ``jet`` into the job's
vertex; a Spark sink vertex is read with format ``jet`` and written where the stage says. A
source whose DataFrame cannot be built or written (a missing path, a failed task) fails the job
with Spark's message.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from jet.connectors.spark import protocol as p
from jet.connectors.spark.arrow_transfer import read_frame, sink_schema, write_frame
from jet.connectors.spark.client import VertexEndedError, tell_members, wait_for_vertex
from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.stages import SparkReadSpec, SparkWriteSpec
from jet.spark.session import activate, spark_failure_message

log = logging.getLogger("jet.spark")


def write_source(spark: Any, spec: SparkReadSpec, options: JetOptions,
                 max_tasks: int | None = None, refusal: Exception | None = None) -> None:
    """Write the source's DataFrame into the job; on failure fail the job with Spark's message.

    ``max_tasks`` coalesces the DataFrame so the write uses at most that many task slots;
    ``refusal`` fails the job's source with that error instead of writing."""
    activate(spark)
    owners = wait_for_vertex(options, "source")
    try:
        if refusal is not None:
            raise refusal
        frame = spec.build(spark)
        if max_tasks is not None:
            frame = frame.coalesce(max_tasks)  # keeps each partition's row order: still exactly-once
        write_frame(frame, options, owners)
    except BaseException as error:
        _report_stage_failure(error, "source", options, owners)
        raise


def read_sink(spark: Any, spec: SparkWriteSpec, options: JetOptions) -> None:
    """Read the job's sink vertex and write it with the stage's format, mode and path; on failure
    fail the job with Spark's message."""
    activate(spark)
    owners = wait_for_vertex(options, "sink")
    try:
        spec.write(read_frame(spark, options, owners, sink_schema(spark, spec.schema, options)))
    except BaseException as error:  # fail the job rather than leave its sink waiting for a reader
        _report_stage_failure(error, "sink", options, owners)
        raise


REPORTED = "_jet_spark_stage_reported"
"""Set on an error a stage has logged and aborted its job with, so it is not said twice."""
_ENDED_JOBS: dict[str, None] = {}
"""Jobs this process saw end before their Spark side (the last few, in order)."""
_ENDED_JOBS_KEPT = 256


def job_ended(job_id: str) -> None:
    """The caller saw ``job_id`` end (failed or cancelled) while its Spark side may still run: a
    Spark stage of it that fails from now on fails because of that, which is no error of its own."""
    _ENDED_JOBS[job_id] = None
    while len(_ENDED_JOBS) > _ENDED_JOBS_KEPT:
        del _ENDED_JOBS[next(iter(_ENDED_JOBS))]


def _report_stage_failure(error: BaseException, kind: str, options: JetOptions, owners: dict[int, int]) -> None:
    """Log a Spark stage's failure once and fail the job's vertex with Spark's message; a stage
    that failed because its job had already ended (another stage failed, the job was cancelled)
    says so at INFO: the job's own failure is the error."""
    reason = spark_failure_message(error)
    if options.job in _ENDED_JOBS or _vertex_ended(options, kind):
        log.info("Spark %s %r stopped: its job ended first (%s)", kind, options.vertex, reason.splitlines()[0])
    else:
        log.error("Spark %s %r failed: %s", kind, options.vertex, reason)
        tell_members(options, {"op": p.ABORT, "reason": reason}, set(owners.values()))
    try:
        setattr(error, REPORTED, True)
    except AttributeError:  # an exception type without a __dict__: said twice, no harm
        pass


def _vertex_ended(options: JetOptions, kind: str) -> bool:
    """Whether the job's Spark vertex has ended on the members (asked briefly: a failure path)."""
    try:
        wait_for_vertex(dataclasses.replace(options, ready_timeout_s=1.0), kind)
    except VertexEndedError:
        return True
    except Exception:  # noqa: BLE001 - running, or not reachable: the failure is the stage's own
        return False
    return False


