"""The ``jet`` command."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import click

from jet.cluster.local import DEFAULT_LOCAL_MEMBERS
from jet.core import DAG
from jet.core.dag import DagValidationError
from jet.execution import JobFailedError, JobTimeoutError, default_cooperative_threads
from jet.execution.tracebacks import failure_report
from jet.job_command import job as job_command
from jet.job_config import JobConfig, ProcessingGuarantee
from jet.job_file import JobFileError, check_job_file, load_job, load_job_dag, to_dag
from jet.run_logging import brief_member_logs, configure_logging
from jet.run_output import SHOWN_ITEMS, print_latest, print_results, write_json_lines

if TYPE_CHECKING:
    from jet.local_run import ClusterBoot, RunOutcome

log = logging.getLogger("jet.cli")


#: The exit codes of `jet run`.
EXIT_COMPLETED = 0
EXIT_JOB_FAILED = 1
EXIT_REJECTED = 2  # a usage error, or a job file that does not load (click's usage errors exit 2)
EXIT_TIMED_OUT = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM (kill, timeout(1), a container stopping)

RUN_EPILOG = f"""\b
Exit codes:
  {EXIT_COMPLETED}    the job completed, or a streaming job ran for its --timeout and was stopped
  {EXIT_JOB_FAILED}    the job failed (its error is printed, the user's frames first), or the
       local members did not start
  {EXIT_REJECTED}    usage error, or the job file was rejected (missing, does not compile,
       raises, defines no job, a missing input or a bad stage); nothing ran
  {EXIT_TIMED_OUT}    the job ran longer than --timeout and was cancelled (a batch job)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C); the job was cancelled
  {EXIT_TERMINATED}  terminated (SIGTERM); the job was cancelled, as on Ctrl-C

\b
With --ui, the Ctrl-C that closes the dashboard after the job ended exits with the
job's own code (0, 1 or 3); a Ctrl-C while the job runs cancels it (130).
"""


class Duration(click.ParamType):
    """A positive duration in seconds: a plain number (seconds) or one with a unit, ms, s, m or h."""

    name = "duration"
    _UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)
        else:
            text = str(value).strip().lower()
            unit = next((u for u in ("ms", "s", "m", "h") if text.endswith(u)), "")
            try:
                seconds = float(text[:len(text) - len(unit)]) * self._UNITS.get(unit, 1.0)
            except ValueError:
                self.fail(f"{value!r} is not a duration: expected seconds (10, 2.5) or a number with"
                          " a unit (500ms, 10s, 2m, 1h)", param, ctx)
        if not seconds > 0 or seconds == float("inf"):
            self.fail(f"{value!r}: a duration must be above 0 and finite", param, ctx)
        return seconds


DURATION = Duration()
GUARANTEES = click.Choice(["none", "at-least-once", "exactly-once"], case_sensitive=False)


def _fault_tolerance_options(command):
    """The job options ``jet run`` and ``jet member --pipeline`` share."""
    options = [
        click.option("--processing-guarantee", "guarantee", type=GUARANTEES, default=None,
                     help="Take snapshots and restore from them after a lost member: at-least-once or"
                          " exactly-once [default: none]."),
        click.option("--snapshot-interval", type=DURATION, default=None, metavar="DURATION",
                     help="Time between the end of one snapshot and the start of the next: 10s, 500ms"
                          " [default: 10s]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def job_config(name: str | None, guarantee: str | None, snapshot_interval: float | None,
               initial_snapshot_name: str | None = None) -> JobConfig:
    """The JobConfig the command's options describe (a bad value is a usage error naming it)."""
    values: dict[str, Any] = {"name": name, "initial_snapshot_name": initial_snapshot_name}
    if guarantee is not None:
        values["processing_guarantee"] = ProcessingGuarantee.parse(guarantee)
    if snapshot_interval is not None:
        values["snapshot_interval_ms"] = max(1, round(snapshot_interval * 1000))
    try:
        return JobConfig(**values)
    except ValueError as error:
        raise click.UsageError(str(error)) from None


def load_job_file(path: str, args: tuple[str, ...] = (), entrypoint: str | None = None,
                  threads: int | None = None) -> DAG:
    """The DAG of the job FILE defines (a Pipeline is planned), or a UsageError saying why not."""
    try:
        job = load_job(path, args, entrypoint)
    except JobFileError as error:
        raise click.UsageError(str(error)) from None
    return to_dag(job, threads or default_cooperative_threads())


@click.group()
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def main(log_level: str) -> None:
    """Jet: low-latency DAG processing in Python."""
    configure_logging(log_level)


def _exit(code: int, message: str) -> None:
    click.echo(message, err=True)
    sys.exit(code)


@main.command(epilog=RUN_EPILOG)
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1)
@click.option("--members", type=click.IntRange(min=1), default=None,
              help="Member processes on this machine (default: the best measured here, see"
                   " bench/README.md); 1 runs the member inside this process.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Cooperative worker threads per member (default 1).")
@click.option("--timeout", type=DURATION, default=None, metavar="DURATION",
              help="Seconds, or a number with a unit: 500ms, 10s, 2m, 1h. A batch job: cancel it"
                   " and exit 3 if it runs longer."
                   " A streaming job (one that reads a stream source): its run time; it is then"
                   " cancelled, the summary printed, and the exit code is 0. Without it a"
                   " streaming job runs until Ctrl-C (exit 130) or until its sources end.")
@click.option("--entrypoint", default=None,
              help="The name FILE defines the job under (default: pipeline, else dag).")
@click.option("--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the items of the job's Sinks.list sinks to this file as JSON lines: one"
                   " item per line, or {\"sink\": NAME, \"item\": ITEM} per line when the job has"
                   " several list sinks. Tuples become arrays, sets sorted arrays, other values"
                   " that JSON cannot hold their str().")
@click.option("--dot", is_flag=True, help="Print the job's DAG in DOT format and exit.")
@click.option("--ui", is_flag=True,
              help="Serve the web dashboard: print one line 'Dashboard: http://HOST:PORT/login?token=...'"
                   " (member 0's, signing the browser in) once the members are up, and keep them up"
                   " after the job ended until Ctrl-C (docs/dashboard.md). The job runs on member"
                   " processes, one at least.")
@click.option("--metrics/--no-metrics", "metrics_enabled", default=True, show_default=True,
              help="Count the metrics only metrics need (JobConfig.metrics_enabled; off: what the"
                   " benchmarks compare the cost against).")
@_fault_tolerance_options
@click.option("--snapshot-store", default=None, metavar="DIR|URL",
              help="Keep job records and snapshots here (kept after the run) [default: a new"
                   " directory, printed at the start, for a job with a guarantee].")
@click.option("--initial-snapshot-name", default=None, metavar="NAME",
              help="Start the job from this exported snapshot of --snapshot-store (the upgrade path:"
                   " `jet job export-snapshot` of an earlier run's job).")
def run(file: str, args: tuple[str, ...], members: int | None, threads: int | None,
        timeout: float | None, entrypoint: str | None, output: str | None, dot: bool, ui: bool,
        metrics_enabled: bool, guarantee: str | None, snapshot_interval: float | None,
        snapshot_store: str | None, initial_snapshot_name: str | None) -> None:
    """Run the job defined in FILE (a pipeline or a DAG), passing it ARGS.

    Prints the first items of each Sinks.list sink (all of them with --output) and the job's
    run time, from its start on the members to its end (start-up and teardown not counted).
    A streaming job runs until Ctrl-C or its --timeout; its live table adds each vertex's
    watermark lag and late events, and the latest items of its observable sinks. With a
    --processing-guarantee the job runs on member processes (at least one) that keep its
    snapshots in a directory printed at the start, and kept after the run."""
    threads = threads or default_cooperative_threads()
    members = members or DEFAULT_LOCAL_MEMBERS
    if initial_snapshot_name is not None and snapshot_store is None:
        raise click.UsageError("--initial-snapshot-name needs --snapshot-store: the store that holds the export"
                               " (say, the directory an earlier run with --processing-guarantee printed)")
    config = dataclasses.replace(job_config(file, guarantee, snapshot_interval, initial_snapshot_name),
                                 metrics_enabled=metrics_enabled)
    if output is not None and not os.access(os.path.dirname(os.path.abspath(output)), os.W_OK):
        raise click.BadParameter(f"cannot write {output!r}: its directory is missing or not writable",
                                 param_hint="--output")
    try:
        check_job_file(file)
    except JobFileError as error:
        _exit(*_exit_for(error))
    with brief_member_logs(), sigterm_as_interrupt():  # this command prints the job's error, once
        ended, outcome, dashboard = _load_and_run(file, args, entrypoint, members, threads, timeout, dot,
                                                  config, ui, snapshot_store)
        code = _report(ended, outcome, output, timeout)
        if dashboard is not None:
            from jet.local_run import hold_dashboard
            hold_dashboard(dashboard)  # until Ctrl-C; the exit code stays the job's
    if code != EXIT_COMPLETED:
        sys.exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM reached ``jet run``: it ends the run as Ctrl-C does (the job cancelled, the members
    stopped in order), with its own exit code."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within: SIGTERM raises :class:`Terminated` in the main thread (only there can it be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report(ended: BaseException | None, outcome: RunOutcome | None, output: str | None,
            timeout: float | None) -> int:
    """Print how the run ended (the results and run time, or the error); its exit code."""
    if ended is not None:
        code, message = _exit_for(ended)
        click.echo(message, err=True)
        return code
    if outcome is None:  # --dot
        return EXIT_COMPLETED
    if output is not None:
        write_json_lines(outcome.results, output)
    print_results(outcome.results, sys.stdout, SHOWN_ITEMS, written_to=output)
    print_latest(outcome.latest, sys.stdout)
    if outcome.stopped:
        click.echo(f"streaming job stopped after its run time (--timeout {timeout:g} s); it ran"
                   f" {outcome.job_seconds:.2f} s on the members", err=True)
        return EXIT_COMPLETED
    click.echo(f"job completed in {outcome.job_seconds:.2f} s (from its start on the members to its"
               " end; start-up and teardown not counted)", err=True)
    return EXIT_COMPLETED


def _load_and_run(file: str, args: tuple[str, ...], entrypoint: str | None, members: int, threads: int,
                  timeout: float | None, dot: bool, config: JobConfig, ui: bool = False,
                  snapshot_store: str | None = None) -> tuple[BaseException | None, RunOutcome | None,
                                                              ClusterBoot | None]:
    """Load the job (booting the members meanwhile) and run it, or print its DAG with ``dot``;
    (the error that ended the run, or None; the outcome of a completed run; with ``ui``, the
    members still up once the job ended, for the caller to close)."""
    from jet.local_run import ClusterBoot, MembersDidNotStart, run_locally  # rich: not for `jet member`

    snapshots = config.processing_guarantee.snapshots or snapshot_store is not None
    # The member processes boot while this process loads and plans the job.
    boot = ClusterBoot(members, threads, keep_snapshot_store=snapshots, snapshot_store=snapshot_store) \
        if (members > 1 or snapshots or ui) and not dot else None
    kept = None
    try:
        dag = load_job_dag(file, args, entrypoint, threads)
        if dot:
            click.echo(dag.to_dot(default_local_parallelism=threads))
            return None, None, None
        outcome = run_locally(dag, file, members, threads, timeout, boot, config, ui=ui)
        kept = boot if ui else None
        return None, outcome, kept
    except (JobFileError, DagValidationError, JobFailedError, JobTimeoutError, MembersDidNotStart,
            KeyboardInterrupt) as error:
        if ui and isinstance(error, (JobFailedError, JobTimeoutError)):
            kept = boot  # the dashboard shows how the job ended
        return error, None, kept
    finally:
        if boot is not None and kept is None:
            boot.close()  # before the last words, so that the members' logs end first


def _exit_for(error: BaseException) -> tuple[int, str]:
    """The exit code and the one message of a run that did not complete."""
    from jet.local_run import MembersDidNotStart

    if isinstance(error, (JobFileError, DagValidationError)):
        return EXIT_REJECTED, f"job rejected: {error}"
    if isinstance(error, JobFailedError):
        return EXIT_JOB_FAILED, failure_report(error, engine_frames=log.isEnabledFor(logging.DEBUG))
    if isinstance(error, JobTimeoutError):
        return EXIT_TIMED_OUT, f"job timed out and was cancelled: {error}"
    if isinstance(error, MembersDidNotStart):
        return EXIT_JOB_FAILED, f"jet run: {error}"
    if isinstance(error, Terminated):
        return EXIT_TERMINATED, "jet run: terminated (SIGTERM); the job was cancelled"
    return EXIT_INTERRUPTED, "jet run: interrupted; the job was cancelled"


def _job_entrypoint(path: str) -> str:
    """The name a job file defines its job under, as ``jet member`` looks for it: ``pipeline``,
    else ``dag`` (read from the file's top-level names, without running it)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(target.id for target in targets if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return "dag" if "pipeline" not in defined and "dag" in defined else "pipeline"


def _has_spark_stages(path: str, args: tuple[str, ...], entrypoint: str) -> bool:
    """Whether the job FILE defines reads or writes through Spark (it is loaded, not run)."""
    from jet.spark.job_stages import spark_stages

    try:
        job = load_job(path, args, entrypoint)
    except Exception as error:  # noqa: BLE001 - the user's code: say why and how to skip loading
        raise click.UsageError(
            f"cannot load {path} to see whether its job uses Spark: {type(error).__name__}: {error}"
            " (pass --spark or --no-spark to write the manifest without loading the file)") from None
    return spark_stages(job) != ([], [])


def _job_name(value: str) -> str:
    """``--name`` checked as Kubernetes will check it (a usage error naming the value)."""
    from jet.contract import job_name_problem

    problem = job_name_problem(value)
    if problem is not None:
        raise click.BadParameter(problem)
    return value


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, callback=lambda _ctx, _param, value: _job_name(value),
              help="The JetJob's name: a DNS label (lowercase letters, digits, '-'; a letter first), "
                   "at most 45 characters.")
@click.option("--replicas", type=click.IntRange(min=1), default=2, show_default=True,
              help="Member pods.")
@click.option("--image", default=None, help="The image of the members (default: the project's).")
@click.option("--entrypoint", default=None,
              help="The name FILE defines the job under [default: pipeline, else dag].")
@click.option("--spark/--no-spark", "with_spark", default=None,
              help="Give the job Spark drivers [default: if FILE's job reads or writes through Spark].")
@click.argument("args", nargs=-1)
def manifest(file: str, name: str, replicas: int, image: str | None, entrypoint: str | None,
             with_spark: bool | None, args: tuple[str, ...]) -> None:
    """Print a JetJob manifest running FILE (inlined), ready for ``kubectl apply -f -``.

    Relative paths in FILE resolve in the member's working directory, /home/jet in the
    project's image, which carries examples/ with their data."""
    from jet.contract import DEFAULT_IMAGE
    from jet.jetjob_manifest import build_jetjob_manifest

    entrypoint = entrypoint or _job_entrypoint(file)
    if with_spark is None:
        with_spark = _has_spark_stages(file, args, entrypoint)
    click.echo(build_jetjob_manifest(file, name, replicas, image or DEFAULT_IMAGE, entrypoint, args,
                                     spark=with_spark), nl=False)


@main.command(context_settings={"show_default": True})
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="gRPC port [default: 5701].")
@click.option("--http-port", type=click.IntRange(1, 65535), default=None,
              help="HTTP port of /healthz, /job and /metrics [default: 8080].")
@click.option("--link-port", type=click.IntRange(0, 65535), default=None,
              help="Port of the other members' links; 0 is any free port [default: 0].")
@click.option("--host", default=None,
              help="Interface to bind [default: all in a Kubernetes pod, else 127.0.0.1].")
@click.option("--peers", default=None,
              help="Every member's host:port in index order: a comma list, a hostfile, or dns:<template with {i}>.")
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="Member count for a dns: template.")
@click.option("--index", "member_index", type=click.IntRange(min=0), default=None,
              help="This member's index [default: the trailing ordinal of $POD_NAME, else 0].")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="YAML settings file (flags > JET_* environment > file > defaults).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Cooperative worker threads.")
@click.option("--pipeline", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Job file that member 0 submits once every member is connected.")
@click.option("--entrypoint", default=None,
              help="The name the job file defines its job under [default: pipeline, else dag].")
@click.option("--job-name", default=None,
              help="The --pipeline job's name [default: the file's name without .py]; a member 0 that"
                   " finds an unfinished job of this name in the snapshot store resumes it instead.")
@_fault_tolerance_options
@click.option("--initial-snapshot-name", default=None,
              help="Start the --pipeline job from this exported snapshot (the upgrade path).")
@click.option("--snapshot-store", default=None,
              help="Directory or URL (s3://bucket/prefix) of job records and snapshots, shared by every"
                   " member [default: $JET_SNAPSHOT_STORE, else none].")
@click.option("--exit-with-parent", is_flag=True, hidden=True,
              help="Die with the parent process (used by the local cluster).")
@click.argument("args", nargs=-1)
def member(port: int | None, http_port: int | None, link_port: int | None, host: str | None, peers: str | None,
           replicas: int | None, member_index: int | None, config_file: str | None, threads: int | None,
           pipeline: str | None, entrypoint: str | None, job_name: str | None, guarantee: str | None,
           snapshot_interval: float | None, initial_snapshot_name: str | None, snapshot_store: str | None,
           exit_with_parent: bool, args: tuple[str, ...]) -> None:
    """Run one cluster member until SIGTERM; ARGS go to the --pipeline job file.

    The cluster token comes from $JET_CLUSTER_TOKEN or the file named by $JET_CLUSTER_TOKEN_FILE,
    the member key (needed when there are peers) from $JET_MEMBER_KEY or $JET_MEMBER_KEY_FILE."""
    import jet.connectors.spark.hub  # noqa: F401 - answers Spark requests from the start, "not yet" before a job
    from jet.cluster.member_main import run_member
    if exit_with_parent:
        from jet.cluster.local.parent_watch import exit_with_parent as watch_parent
        watch_parent()
    job_supplier = (lambda: load_job_file(pipeline, args, entrypoint, threads)) if pipeline else None
    config = (job_config(job_name or os.path.splitext(os.path.basename(pipeline))[0], guarantee, snapshot_interval,
                         initial_snapshot_name) if pipeline else None)
    flags = {"port": port, "http_port": http_port, "link_port": link_port, "host": host, "peers": peers,
             "replicas": replicas,
             "member_index": member_index, "cooperative_threads": threads, "snapshot_store": snapshot_store}
    sys.exit(run_member(flags, config_file, job_supplier, config))

def _spark_driver_options(command):
    """The options ``jet spark-source`` and ``jet spark-sink`` share."""
    options = [
        click.option("--pipeline", "pipeline_file", required=True, type=click.Path(dir_okay=False),
                     help="The pipeline file."),
        click.option("--entrypoint", default="pipeline", show_default=True,
                     help="The name the file defines the pipeline under."),
        click.option("--members", required=True, help="host:port,... of the job's members."),
        click.option("--token-file", default=None, type=click.Path(dir_okay=False),
                     help="File holding the cluster token (default: $JET_CLUSTER_TOKEN[_FILE])."),
        click.option("--job-id", default="job", show_default=True, help="The running job's id."),
        click.option("--master", default="local[*]", show_default=True, help="Spark master URL."),
        click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark configuration."),
        click.option("--ready-timeout", type=click.FloatRange(min=0, min_open=True), default=120.0,
                     show_default=True, help="Seconds to wait for the job's Spark vertices."),
        click.argument("args", nargs=-1),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _run_spark_driver(kind: str, pipeline_file: str, entrypoint: str, members: str, token_file: str | None,
                      job_id: str, master: str, confs: tuple[str, ...], ready_timeout: float,
                      args: tuple[str, ...]) -> None:
    from jet.cluster.links.auth import load_cluster_token
    from jet.spark.job_stages import load_pipeline
    from jet.spark.runner import run_spark_side
    from jet.spark.session import spark_session
    conf = {}
    for entry in confs:
        key, sep, value = entry.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--conf expects KEY=VALUE, got {entry!r}")
        conf[key] = value
    try:
        token = (load_cluster_token(open(token_file, encoding="utf-8").read()) if token_file
                 else load_cluster_token())
        pipeline = load_pipeline(pipeline_file, entrypoint, args)
    except (OSError, ValueError, RuntimeError) as error:
        raise click.UsageError(str(error)) from None
    spark = spark_session(master, conf, f"jet-{kind}-{job_id}")
    try:
        run_spark_side(spark, pipeline, [m.strip() for m in members.split(",") if m.strip()], token, job_id,
                       sources=kind == "source", sinks=kind == "sink", ready_timeout_s=ready_timeout)
    except Exception as error:  # noqa: BLE001 - the job was told; say why and fail
        from jet.spark.session import spark_failure_message
        click.echo(f"spark-{kind} failed: {spark_failure_message(error)}", err=True)
        sys.exit(1)
    finally:
        spark.stop()


@main.command("spark-source")
@_spark_driver_options
def spark_source(**kwargs: Any) -> None:
    """Spark driver of a pipeline's Spark sources: write each source's DataFrame into the job."""
    _run_spark_driver("source", **kwargs)


@main.command("spark-sink")
@_spark_driver_options
def spark_sink(**kwargs: Any) -> None:
    """Spark driver of a pipeline's Spark sinks: read each sink of the job and write it out."""
    _run_spark_driver("sink", **kwargs)


main.add_command(job_command)

if __name__ == "__main__":
    main()
