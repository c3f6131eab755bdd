"""The Spark side of Spark *stream* stages: long-lived Structured Streaming queries.

:func:`run_stream_source` runs ``spec.build(spark).writeStream.format("jet")`` into the job's
Spark stream source; :func:`run_stream_sink` runs ``spark.readStream.format("jet")`` out of
the job's Spark stream sink into the stage's Spark sink. Both return when their query ends:

- a stream source's query ends by itself (``available_now``), or when :func:`end_spark_streams`
  asks it to (it first processes what is available, for ``DRAIN_TIMEOUT_S`` at most): the
  members are told ``end`` and the job's source completes once every committed micro-batch
  is emitted;
- every query is stopped when its vertex no longer runs on any member (the job completed,
  failed or was cancelled: a sink's vertex completes only after Spark committed all of its
  items) or when :func:`stop_spark_streams` is called;
- a query that fails fails the job's vertex with Spark's message (``abort``) and raises.

``jet spark-source``/``jet spark-sink`` and the local runner run these through
:func:`jet.spark.runner.run_spark_side`, which dispatches on the stage's spec.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from typing import Any

from jet.connectors.spark import protocol as p
from jet.connectors.spark.client import JetSparkError, _alive, close_all, connect_all, tell_members, wait_for_vertex
from jet.connectors.spark.options import JetOptions
from jet.connectors.spark.stream_endpoints import JOB_RESTARTED
from jet.connectors.spark.streaming_sink import SparkStreamWriteSpec
from jet.connectors.spark.streaming_source import SparkStreamReadSpec
from jet.spark.session import activate, spark_failure_message

log = logging.getLogger("jet.spark")
WATCH_PERIOD_S = 0.5
DRAIN_TIMEOUT_S = 120.0
"""How long an ending query may take to process what is available before it is stopped."""
RESTART_GRACE_S = 60.0
"""How long the vertex of a job that takes snapshots may be gone (a restart) before its query stops."""
MAX_QUERY_RESTARTS = 10
"""How often a stream source's query is started again after the job restarted under it."""
PROGRESS_PERIOD_S = 30.0
"""How often a long-lived query logs a progress line (a driver pod's log shows it is alive)."""


class StreamControl:
    """What the local runner and tests may ask of one job's Spark streaming queries."""

    def __init__(self) -> None:
        self.end_sources = threading.Event()
        self.stop_all = threading.Event()


_CONTROLS: dict[str, StreamControl] = {}
_CONTROLS_LOCK = threading.Lock()


def stream_control(job_id: str) -> StreamControl:
    """The control of ``job_id``'s streaming queries in this process (made on first use)."""
    with _CONTROLS_LOCK:
        return _CONTROLS.setdefault(job_id, StreamControl())


def forget_stream_control(job_id: str) -> None:
    with _CONTROLS_LOCK:
        _CONTROLS.pop(job_id, None)


def end_spark_streams(job_id: str) -> None:
    """Let the Spark stream sources of job ``job_id`` (run in this process) read what is
    available now and end, so that the job's stream sources complete (tests end streams so)."""
    stream_control(job_id).end_sources.set()


def stop_spark_streams(job_id: str) -> None:
    """Stop every Spark streaming query of job ``job_id`` in this process now (the job ended)."""
    with _CONTROLS_LOCK:
        control = _CONTROLS.get(job_id)
    if control is not None:
        control.stop_all.set()


def _vertex_runs(links: list, options: JetOptions) -> tuple[bool, bool, bool]:
    """Whether any member still runs a processor of the options' vertex, whether the job takes
    snapshots (then a vertex that is gone may be restarting), and whether it finished."""
    finished = False
    for position in range(len(links)):
        try:
            reply, _ = _alive(links, position).request({"op": p.PROBE, "job": options.job, "vertex": options.vertex})
        except JetSparkError:
            continue  # a member that does not answer does not run it
        if reply.get("processors"):
            return True, bool(reply.get("snapshots")), False
        finished = finished or bool(reply.get("finished"))
    return False, False, finished


def _watch(query: Any, options: JetOptions, control: StreamControl, may_end: bool) -> bool:
    """Wait for ``query`` to end; stop it when its vertex is gone (for ``RESTART_GRACE_S`` if
    the job takes snapshots: it may be restarting) or on request. True when it ended as a
    stream should (by itself, or asked to end after reading what was available); raises
    Spark's error when it failed."""
    links = connect_all(options)
    next_progress = time.monotonic() + PROGRESS_PERIOD_S
    snapshots, gone_since = False, None
    try:
        while not query.awaitTermination(WATCH_PERIOD_S):  # raises StreamingQueryException on failure
            if time.monotonic() >= next_progress:
                next_progress += PROGRESS_PERIOD_S
                _log_progress(query, options)
            if may_end and control.end_sources.is_set():
                _drain_and_stop(query)
                query.awaitTermination()  # raises Spark's error if the query failed meanwhile
                return True
            runs, takes_snapshots, finished = _vertex_runs(links, options)
            snapshots = snapshots or takes_snapshots
            if runs:
                gone_since = None
            elif gone_since is None:
                gone_since = time.monotonic()
            gone = not runs and (finished or not snapshots or time.monotonic() - gone_since >= RESTART_GRACE_S)
            if control.stop_all.is_set() or gone:
                log.info("stopping Spark streaming query %s of %r: the job's vertex ended", query.id, options.vertex)
                _drain_and_stop(query)
                return False
        return True
    finally:
        close_all(links)


def _log_progress(query: Any, options: JetOptions) -> None:
    progress = query.lastProgress or {}
    log.info("Spark stream of %r: micro-batch %s, %s rows in it, %.1f rows/s", options.vertex,
             progress.get("batchId", "-"), progress.get("numInputRows", 0),
             float(progress.get("processedRowsPerSecond") or 0.0))


def _drain_and_stop(query: Any) -> None:
    """Stop ``query`` once it has processed what is available, so that no micro-batch is cut
    short (a sink's last one commits the output); after ``DRAIN_TIMEOUT_S`` at most, as a
    source that always has more (``rate``) never drains."""
    def drain() -> None:
        try:
            query.processAllAvailable()
        except Exception as error:  # noqa: BLE001 - awaitTermination raises it for whoever needs it
            log.info("Spark streaming query %s ended with: %s", query.id, spark_failure_message(error))

    draining = threading.Thread(target=drain, name=f"jet-spark-drain-{query.id}", daemon=True)
    draining.start()
    draining.join(DRAIN_TIMEOUT_S)
    if draining.is_alive():
        log.warning("Spark streaming query %s still had data after %.0f s (a source that always has more,"
                    " such as rate?): stopping it in the middle of a micro-batch", query.id, DRAIN_TIMEOUT_S)
    query.stop()
    draining.join()


def _checkpoint(location: str | None) -> tuple[str, bool]:
    """The query's checkpoint location, and whether it is a temporary one to delete after."""
    if location:
        return location, False
    return tempfile.mkdtemp(prefix="jet-spark-checkpoint-"), True


def _abort(options: JetOptions, owners: dict[int, int], error: BaseException) -> None:
    reason = spark_failure_message(error)
    log.error("Spark streaming query of %r failed: %s", options.vertex, reason)
    tell_members(options, {"op": p.ABORT, "reason": reason}, set(owners.values()))


def run_stream_source(spark: Any, spec: SparkStreamReadSpec, options: JetOptions, max_tasks: int | None = None,
                      refusal: Exception | None = None) -> None:
    """Write the streaming DataFrame of ``spec`` into the job until its query ends (see the
    module docstring); ``max_tasks`` coalesces each micro-batch to that many write tasks.

    A micro-batch whose commit the members refused because the job stopped before a snapshot
    held it (the job is restarting from its last snapshot) fails the query; it is started
    again from its checkpoint, up to ``MAX_QUERY_RESTARTS`` times, so Spark replays that batch
    into the restored job."""
    activate(spark)
    owners = wait_for_vertex(options, "stream-source")
    control = stream_control(options.job)
    checkpoint, temporary = _checkpoint(spec.checkpoint_location)
    restarts = 0
    try:
        if refusal is not None:
            raise refusal
        while True:
            try:
                ended = _watch(_start_stream_write(spec, spark, options, checkpoint, max_tasks), options, control,
                               may_end=True)
                break
            except Exception as error:  # noqa: BLE001 - a restart of the job is retried, the rest raised
                if JOB_RESTARTED not in str(error) or restarts >= MAX_QUERY_RESTARTS:
                    raise
                restarts += 1
                log.info("Spark stream into %r: the job restarted before a snapshot held a micro-batch; "
                         "running the query again from its checkpoint (restart %d)", options.vertex, restarts)
                owners = wait_for_vertex(options, "stream-source")
    except BaseException as error:
        _abort(options, owners, error)
        raise
    finally:
        if temporary:
            shutil.rmtree(checkpoint, ignore_errors=True)
    if ended:
        tell_members(options, {"op": p.END}, set(owners.values()))


def _start_stream_write(spec: SparkStreamReadSpec, spark: Any, options: JetOptions, checkpoint: str,
                        max_tasks: int | None) -> Any:
    frame = spec.build(spark)
    if max_tasks is not None:
        frame = frame.coalesce(max_tasks)  # keeps each partition's row order: still exactly-once
    writer = (frame.writeStream.format("jet").options(**options.as_spark_options())
              .option("checkpointLocation", checkpoint))
    if spec.available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def run_stream_sink(spark: Any, spec: SparkStreamWriteSpec, options: JetOptions) -> None:
    """Read the job's stream sink vertex as a stream and write it with the stage's Spark
    streaming sink until the vertex has completed (or the job ended otherwise)."""
    activate(spark)
    owners = wait_for_vertex(options, "stream-sink")
    control = stream_control(options.job)
    checkpoint, temporary = _checkpoint(spec.checkpoint_location)
    try:
        reader = spark.readStream.format("jet").options(**options.as_spark_options())
        if spec.schema is not None:
            reader = reader.schema(spec.schema)
        _watch(spec.start(reader.load(), checkpoint), options, control, may_end=False)
    except BaseException as error:
        _abort(options, owners, error)
        raise
    finally:
        if temporary:
            shutil.rmtree(checkpoint, ignore_errors=True)
