"""The ``jet`` command."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

import click

from jet.core import DAG
from jet.execution import JobFailedError, JobTimeoutError, default_cooperative_threads
from jet.execution.runner import start
from jet.job_file import JobFileError, load_job, to_dag
from jet.progress import ProgressDisplay

log = logging.getLogger("jet.cli")

#: Members `jet run` starts by default: one per core, each with one cooperative thread. On the
#: 2-core benchmark machine 2 members ran word count over 100 MB in 6.7 s against 8.8 s for one
#: member in this process (bench/README.md); a member process costs about 0.7 s to start.
DEFAULT_LOCAL_MEMBERS = os.cpu_count() or 1


def _configure_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")


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
    _configure_logging(log_level)


def _print_results(results: dict[str, list], shown: int = 20) -> None:
    for name, items in results.items():
        click.echo(f"result {name!r}: {len(items)} item(s)")
        for item in items[:shown]:
            click.echo(f"  {item!r}")
        if len(items) > shown:
            click.echo(f"  ... {len(items) - shown} more")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1)
@click.option("--members", type=click.IntRange(min=1), default=None,
              help="Member processes on this machine (default: the best measured here, see"
                   " bench/README.md); 1 runs the member inside this process.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Cooperative worker threads per member (default 1).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Fail the job if it runs longer than this many seconds.")
@click.option("--entrypoint", default=None,
              help="The name FILE defines the job under (default: pipeline, else dag).")
@click.option("--dot", is_flag=True, help="Print the job's DAG in DOT format and exit.")
def run(file: str, args: tuple[str, ...], members: int | None, threads: int | None,
        timeout: float | None, entrypoint: str | None, dot: bool) -> None:
    """Run the job defined in FILE (a pipeline or a DAG), passing it ARGS."""
    threads = threads or default_cooperative_threads()
    members = members or DEFAULT_LOCAL_MEMBERS
    started = time.perf_counter()
    # The member processes boot while this process loads and plans the job.
    boot = ClusterBoot(members, threads) if members > 1 and not dot else None
    try:
        try:
            dag = load_job_file(file, args, entrypoint, threads)
        except click.UsageError:
            raise
        except Exception as error:  # noqa: BLE001 - a bad pipeline, source or sink: say which
            click.echo(f"job rejected: {type(error).__name__}: {error}", err=True)
            sys.exit(1)
        if dot:
            click.echo(dag.to_dot(default_local_parallelism=threads))
            return
        log.info("job DAG:\n%s", dag.to_dot(default_local_parallelism=threads))
        results, job_seconds = _run_locally(dag, file, members, threads, timeout, boot)
    except JobFailedError as failure:
        click.echo(f"job failed: {failure}", err=True)
        sys.exit(1)
    except JobTimeoutError as timed_out:
        click.echo(f"job timed out: {timed_out}", err=True)
        sys.exit(2)
    finally:
        if boot is not None:
            boot.close()
    _print_results(results)
    total = time.perf_counter() - started
    click.echo(f"job ran in {job_seconds:.2f} s (start-up and teardown {total - job_seconds:.2f} s)",
               err=True)
    log.info("job completed in %.2f s", total)


class ClusterBoot:
    """A local cluster started in a background thread; ``get()`` waits until it is up.

    The thread lives until ``close()``: the members die with the thread that started them
    (PR_SET_PDEATHSIG follows the parent thread), so it must not end while they are used."""

    def __init__(self, members: int, threads: int) -> None:
        self._cluster = None
        self._error: BaseException | None = None
        self._up = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(members, threads),
                                        name="jet-cluster-boot", daemon=True)
        self._thread.start()

    def _run(self, members: int, threads: int) -> None:
        from jet.local import local_cluster
        try:
            self._cluster = local_cluster(members=members, threads=threads)
        except BaseException as error:  # noqa: BLE001 - re-raised by get()
            self._error = error
        self._up.set()
        self._closed.wait()

    def get(self):
        self._up.wait()
        if self._error is not None:
            raise self._error
        return self._cluster

    def close(self) -> None:
        self._up.wait()
        if self._cluster is not None:
            self._cluster.close(wait=False)
        self._closed.set()


def _run_locally(dag: DAG, name: str, members: int, threads: int, timeout: float | None,
                 boot: ClusterBoot | None) -> tuple[dict[str, list], float]:
    """Run on ``members`` local members with a progress display; return the job's results
    and how long the job itself ran."""
    from jet.connectors.spark.driver import spark_stages

    if members == 1 and spark_stages(dag) != ([], []):
        members = 2  # Spark tasks reach members over gRPC: run a local cluster
    if members == 1:
        started = time.perf_counter()
        job = start(dag, threads, job_name=name)
        with ProgressDisplay(job.metrics, title=name):
            results = job.join(timeout)
        return results, time.perf_counter() - started
    if boot is None:
        boot = ClusterBoot(members, threads)
    try:
        cluster = boot.get()
        started = time.perf_counter()
        job = cluster.new_job(dag)  # with its Spark side, if it has Spark stages
        with ProgressDisplay(job.metrics, title=name):
            job.join(timeout)
        return job.results(), time.perf_counter() - started
    finally:
        boot.close()


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
    from jet.connectors.spark.driver import spark_stages

    try:
        job = load_job(path, args, entrypoint)
    except Exception as error:  # noqa: BLE001 - the user's code: say why and how to skip loading
        raise click.UsageError(
            f"cannot load {path} to see whether its job uses Spark: {type(error).__name__}: {error}"
            " (pass --spark or --no-spark to write the manifest without loading the file)") from None
    return spark_stages(job) != ([], [])


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, help="The JetJob's name (a DNS label).")
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
    from jet_operator.constants import DEFAULT_IMAGE
    from jet_operator.manifest import build_jetjob_manifest

    entrypoint = entrypoint or _job_entrypoint(file)
    if with_spark is None:
        with_spark = _has_spark_stages(file, args, entrypoint)
    click.echo(build_jetjob_manifest(file, name, replicas, image or DEFAULT_IMAGE, entrypoint, args,
                                     spark=with_spark), nl=False)


@main.command(context_settings={"show_default": True})
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="gRPC port [default: 5701].")
@click.option("--http-port", type=click.IntRange(1, 65535), default=None,
              help="HTTP port of /healthz, /job and /metrics [default: 8080].")
@click.option("--host", default=None, help="Interface to bind [default: all].")
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
@click.option("--exit-with-parent", is_flag=True, hidden=True,
              help="Die with the parent process (used by the local cluster).")
@click.argument("args", nargs=-1)
def member(port: int | None, http_port: int | None, host: str | None, peers: str | None,
           replicas: int | None, member_index: int | None, config_file: str | None, threads: int | None,
           pipeline: str | None, entrypoint: str | None, exit_with_parent: bool, args: tuple[str, ...]) -> None:
    """Run one cluster member until SIGTERM; ARGS go to the --pipeline job file.

    The cluster token comes from $JET_CLUSTER_TOKEN or the file named by $JET_CLUSTER_TOKEN_FILE."""
    from jet.cluster.member_main import run_member
    if exit_with_parent:
        from jet.cluster.parent_watch import exit_with_parent as watch_parent
        watch_parent()
    job_supplier = (lambda: load_job_file(pipeline, args, entrypoint, threads)) if pipeline else None
    flags = {"port": port, "http_port": http_port, "host": host, "peers": peers, "replicas": replicas,
             "member_index": member_index, "cooperative_threads": threads}
    sys.exit(run_member(flags, config_file, job_supplier))

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
    from jet.cluster.auth import load_cluster_token
    from jet.connectors.spark.driver import load_pipeline, run_spark_side, spark_session

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
        from jet.connectors.spark.driver import spark_failure_message
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


if __name__ == "__main__":
    main()
