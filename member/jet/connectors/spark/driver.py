"""The Spark side of a job: ``jet spark-source`` and ``jet spark-sink`` (Spark drivers), and
:func:`run_spark_side` for the local runner.

``spark-source`` builds the DataFrame of every Spark source stage and writes it with format
``jet`` into the job's vertex; ``spark-sink`` reads every Spark sink vertex with format ``jet``
and writes it where the stage says. Vertex names are the planner's stage names, so the
driver and the job agree without talking. A source whose DataFrame cannot be built or written
(a missing path, a failed task) fails the job with Spark's message.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import runpy
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

import jet
from jet.connectors.spark import protocol as p
from jet.connectors.spark.arrow_transfer import read_frame, sink_schema, write_frame
from jet.connectors.spark.client import VertexEndedError, tell_members, wait_for_vertex
from jet.connectors.spark.options import (COLUMNAR_CHUNK_ROWS, DEFAULT_CHUNK_ROWS, DEFAULT_READY_TIMEOUT_S, JetOptions,
                                         default_tls_ca_file)
from jet.connectors.spark.spark_home import bytecode_spark_home
from jet.connectors.spark.stages import (SparkReadSpec, SparkSink, SparkSinkSupplier, SparkSource,
                                        SparkSourceSupplier, SparkWriteSpec)
from jet.connectors.spark.streaming_sink import SparkStreamSink, SparkStreamSinkSupplier, SparkStreamWriteSpec
from jet.connectors.spark.streaming_source import SparkStreamReadSpec, SparkStreamSource, SparkStreamSourceSupplier

log = logging.getLogger("jet.connectors.spark.driver")
SOURCE_ROOT = str(Path(jet.__file__).resolve().parents[1])


def load_pipeline(path: str, entrypoint: str = "pipeline", args: Sequence[str] = ()) -> Any:
    """Run a pipeline file and return the Pipeline it defines as ``entrypoint`` (a Pipeline or
    a function of the file's extra arguments returning one)."""
    from jet.pipeline.pipeline import Pipeline

    if not os.path.isfile(path):
        raise FileNotFoundError(f"pipeline file {path!r} does not exist")
    namespace = runpy.run_path(path, run_name="__jet_pipeline__")
    definition = namespace.get(entrypoint)
    if definition is None:
        raise ValueError(f"{path} defines no {entrypoint!r} (a Pipeline, or a function returning one)")
    pipeline = definition(*args) if callable(definition) and not isinstance(definition, Pipeline) else definition
    if not isinstance(pipeline, Pipeline):
        raise ValueError(f"{entrypoint!r} in {path} gave {type(pipeline).__name__}, expected a jet Pipeline")
    return pipeline


ReadSpec = SparkReadSpec | SparkStreamReadSpec
WriteSpec = SparkWriteSpec | SparkStreamWriteSpec


def spark_stages(job: Any) -> tuple[list[tuple[str, ReadSpec]], list[tuple[str, WriteSpec]]]:
    """(vertex name, spec) of every Spark source and Spark sink (batch or stream) of a Pipeline
    or a DAG."""
    from jet.core.dag import DAG

    if isinstance(job, DAG):
        suppliers = [(vertex.name, vertex.processor_supplier) for vertex in job.vertices]
    else:
        from jet.pipeline.planner import unique_names
        suppliers = [(name, transform.connector.supplier)
                     for transform, name in unique_names(job.transforms).items()
                     if isinstance(transform.connector, (SparkSource, SparkSink, SparkStreamSource, SparkStreamSink))]
    sources = [(name, s.spec) for name, s in suppliers
               if isinstance(s, (SparkSourceSupplier, SparkStreamSourceSupplier))]
    sinks = [(name, s.spec) for name, s in suppliers if isinstance(s, (SparkSinkSupplier, SparkStreamSinkSupplier))]
    return sources, sinks


def columnar_sources(job: Any) -> set[str]:
    """The Spark source vertices of a Pipeline or a DAG whose processors emit whole batches (a
    ``map_batches`` stage takes them): their writers send larger frames."""
    from jet.core.dag import DAG

    if isinstance(job, DAG):
        return {vertex.name for vertex in job.vertices
                if isinstance(vertex.processor_supplier, SparkSourceSupplier) and vertex.processor_supplier.columnar}
    from jet.pipeline.columnar_planning import takes_columnar_input
    from jet.pipeline.planner import unique_names
    return {name for transform, name in unique_names(job.transforms).items()
            if isinstance(transform.connector, SparkSource) and takes_columnar_input(transform)}


def sink_task_count(job: Any, sink_vertices: Sequence[str], member_count: int) -> int:
    """Spark reader tasks the job's Spark sinks need: one per sink processor in the cluster."""
    from jet.core.dag import DAG

    per_member = 0
    for name in sink_vertices:
        lp = job.get_vertex(name).local_parallelism if isinstance(job, DAG) else 1
        per_member += max(1, lp)
    return per_member * member_count


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
            if getattr(error, _REPORTED, False):
                return  # its stage logged it and aborted the job
            reason = spark_failure_message(error)
            log.error("the Spark side of job %s failed: %s", job_id, reason)
            # A stage that never ran (the session did not start, say) has not aborted its vertex,
            # which would wait for Spark forever.
            abort_spark_vertices(job, members, token, job_id, f"the Spark side failed: {reason}")

    thread = threading.Thread(target=run, name=f"jet-spark-{job_id}", daemon=True)
    thread.start()
    return thread


def spark_session(master: str = "local[*]", conf: dict[str, str] | None = None, app_name: str = "jet"):
    """A SparkSession whose Python workers run this interpreter and can import ``jet``, with the
    ``jet`` format registered. A local session's Python workers start from bytecode
    (:mod:`jet.connectors.spark.spark_home`) and fork with ``pyspark.worker`` loaded
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


_REPORTED = "_jet_spark_stage_reported"
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
        setattr(error, _REPORTED, True)
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
    (:mod:`jet.connectors.spark.streaming_driver`), until their stream or the job ends.

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
    from jet.connectors.spark.streaming_driver import (  # it imports this module
        forget_stream_control, run_stream_sink, run_stream_source)

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
