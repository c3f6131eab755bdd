"""Runs the Spark side of a job: every Spark stage, batch (:mod:`.batch_side`) or stream
(:mod:`.stream_side`), concurrently, beside the job (``jet spark-source``, ``jet spark-sink``
and the local runner).
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Sequence

from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import VertexEndedError, tell_members, wait_for_vertex
from jet.connectors.spark.options import (
    COLUMNAR_CHUNK_ROWS,
    DEFAULT_CHUNK_ROWS,
    DEFAULT_READY_TIMEOUT_S,
    JetOptions,
    default_tls_ca_file,
)
from jet.connectors.spark.streaming_sink import SparkStreamWriteSpec
from jet.connectors.spark.streaming_source import SparkStreamReadSpec
from jet.spark.batch_side import REPORTED, read_sink, write_source
from jet.spark.job_stages import columnar_sources, sink_task_count, spark_stages
from jet.spark.session import spark_failure_message, spark_session
from jet.spark.stream_side import forget_stream_control, run_stream_sink, run_stream_source

log = logging.getLogger("jet.spark")


def start_spark_side(job: Any, members: Sequence[str], token: str, job_id: str,
                     master: str | None = None) -> threading.Thread | None:
    """The local runner's hook: when ``job`` (a Pipeline or DAG) has Spark stages, run their
    Spark side in a local SparkSession (started once, ``PYSPARK_PYTHON`` = this interpreter) on
    a daemon thread and return it; None when there is nothing to do. A failure of the Spark
    side reaches the job (sources are aborted with Spark's message).

    The default master gives the session enough task slots for every sink reader plus writers
    (see :func:`run_spark_side`)."""
    sources, sinks = spark_stages(job)
    if not sources and not sinks:
        return None
    if master is None:
        readers = sink_task_count(job, [name for name, _ in sinks], len(members))
        master = f"local[{max(os.cpu_count() or 1, readers + 2)}]"

    def run() -> None:
        try:
            run_spark_side(spark_session(master, app_name=f"jet-{job_id}"), job, members, token, job_id)
        except Exception as error:  # noqa: BLE001 - the job fails with it; say it here too
            if getattr(error, REPORTED, False):
                return  # its stage logged it and aborted the job
            reason = spark_failure_message(error)
            log.error("the Spark side of job %s failed: %s", job_id, reason)
            # A stage that never ran (the session did not start, say) has not aborted its vertex,
            # which would wait for Spark forever.
            abort_spark_vertices(job, members, token, job_id, f"the Spark side failed: {reason}")

    thread = threading.Thread(target=run, name=f"jet-spark-{job_id}", daemon=True)
    thread.start()
    return thread


def abort_spark_vertices(job: Any, members: Sequence[str], token: str, job_id: str, reason: str) -> None:
    """Fail ``job`` with ``reason`` through its Spark vertices: the first of them that takes an
    abort on every member that runs it fails the whole job; when none does, that is logged. A job
    already over (a failed stage aborted it itself) is left as it is."""
    sources, sinks = spark_stages(job)
    errors = []
    for kind, stages in (("source", sources), ("sink", sinks)):
        for vertex, _ in stages:
            options = JetOptions(job_id, vertex, tuple(members), token, tls_ca_file=default_tls_ca_file())
            try:  # the job may still be starting: its vertex must run to take the abort
                owners = wait_for_vertex(options, kind)
                refused = tell_members(options, {"op": p.ABORT, "reason": reason}, set(owners.values()))
            except VertexEndedError:
                return
            except Exception as error:  # noqa: BLE001 - the next vertex may take it
                refused = [f"{type(error).__name__}: {error}"]
            if not refused:
                return
            errors += [f"{vertex!r}: {error}" for error in refused]
    if errors:
        log.warning("could not fail job %s through its Spark vertices: %s", job_id, "; ".join(errors))


def _write_task_limit(spark: Any, job: Any, sources: list, sinks: list, member_count: int) -> int | None:
    """With sources and sinks in one session, how many task slots each source write may take.

    Reader tasks wait for the job's output and writer tasks may wait for the job to take their
    rows: if either filled every slot of the session, neither would finish. So every reader
    keeps a slot and the writes share what is left."""
    if not sources or not sinks:
        return None
    slots = spark.sparkContext.defaultParallelism
    readers = sink_task_count(job, [name for name, _ in sinks], member_count)
    if slots - readers < 1:
        raise ValueError(f"the SparkSession has {slots} task slots, but the job's Spark sinks need"
                         f" {readers} reader tasks and the sources at least one writer task: use"
                         f" a master with at least {readers + 1} slots, e.g. local[{readers + 2}]")
    return max(1, (slots - readers) // len(sources))


def run_spark_side(spark: Any, pipeline: Any, members: Sequence[str], token: str, job_id: str, *,
                   sources: bool = True, sinks: bool = True,
                   ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S, tls_ca_file: str | None = None) -> None:
    """Run the Spark side of every Spark stage of ``pipeline`` concurrently (one thread per
    stage: a sink must be read while the sources are still written) and raise the first error.
    Stream stages run as long-lived streaming queries
    (:mod:`jet.spark.stream_side`), until their stream or the job ends.

    ``tls_ca_file`` (default ``$JET_TLS_CA_FILE``): the CA to verify TLS members with."""
    tls_ca_file = tls_ca_file or default_tls_ca_file()
    source_specs, sink_specs = spark_stages(pipeline)
    source_specs = source_specs if sources else []
    sink_specs = sink_specs if sinks else []
    write_tasks, refusal = None, None
    try:
        write_tasks = _write_task_limit(spark, pipeline, source_specs, sink_specs, len(members))
    except ValueError as error:  # the sources fail the job with it, so nothing waits for rows
        refusal = error
    work = [(run_stream_source if isinstance(spec, SparkStreamReadSpec) else write_source, vertex, spec,
             spec.row_type) for vertex, spec in source_specs]
    work += [(run_stream_sink if isinstance(spec, SparkStreamWriteSpec) else read_sink, vertex, spec, "tuple")
             for vertex, spec in sink_specs]
    errors: list[BaseException] = []

    columnar = columnar_sources(pipeline)

    def run(action, vertex, spec, row_type) -> None:
        options = JetOptions(job_id, vertex, tuple(members), token, ready_timeout_s=ready_timeout_s,
                             chunk_rows=COLUMNAR_CHUNK_ROWS if vertex in columnar else DEFAULT_CHUNK_ROWS,
                             row_type=row_type, driver_reports_failure=True, tls_ca_file=tls_ca_file)
        try:
            if action in (write_source, run_stream_source):
                action(spark, spec, options, write_tasks, refusal)
            else:
                action(spark, spec, options)
        except BaseException as error:  # noqa: BLE001 - reported to the caller below
            errors.append(error)

    threads = [threading.Thread(target=run, args=item, name=f"jet-spark-{item[1]}", daemon=True) for item in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    forget_stream_control(job_id)
    if errors:
        raise errors[0]
