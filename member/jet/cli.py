"""The ``jet`` command."""

from __future__ import annotations

import logging
import runpy
import sys
import time
import traceback
from typing import Any

import click

from jet.core import DAG
from jet.execution import JobFailedError, JobTimeoutError, default_cooperative_threads, execute

log = logging.getLogger("jet.cli")


def _configure_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")


def load_job_file(path: str, args: tuple[str, ...], entrypoint: str = "dag") -> DAG:
    """Run the job file and return the DAG it defines as ``entrypoint`` (default ``dag``: a DAG
    or a function that takes the script's extra arguments and returns one)."""
    try:
        namespace = runpy.run_path(path, run_name="__jet_job__")
    except FileNotFoundError:
        raise click.UsageError(f"job file {path!r} does not exist") from None
    definition: Any = namespace.get(entrypoint)
    if definition is None:
        raise click.UsageError(f"{path} defines no {entrypoint!r} (a DAG, or a function returning one)")
    dag = definition(*args) if callable(definition) and not isinstance(definition, DAG) else definition
    if not isinstance(dag, DAG):
        raise click.UsageError(f"{entrypoint!r} in {path} gave {type(dag).__name__}, expected a jet.core.DAG")
    return dag


@click.group()
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False))
def main(log_level: str) -> None:
    """Jet: low-latency DAG processing in Python."""
    _configure_logging(log_level)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1)
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Cooperative worker threads (default: the member default, 1).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Fail the job if it runs longer than this many seconds.")
@click.option("--dot", is_flag=True, help="Print the job's DAG in DOT format and exit.")
def run(file: str, args: tuple[str, ...], threads: int | None, timeout: float | None,
        dot: bool) -> None:
    """Run the job defined in FILE, passing it ARGS."""
    dag = load_job_file(file, args)
    threads = threads or default_cooperative_threads()
    if dot:
        click.echo(dag.to_dot(default_local_parallelism=threads))
        return
    log.info("job DAG:\n%s", dag.to_dot(default_local_parallelism=threads))
    started = time.perf_counter()
    try:
        execute(dag, cooperative_threads=threads, timeout=timeout, job_name=file)
    except JobFailedError as failure:
        click.echo(f"job failed: {failure}", err=True)
        sys.exit(1)
    except JobTimeoutError as timed_out:
        click.echo(f"job timed out: {timed_out}", err=True)
        sys.exit(2)
    except Exception:  # noqa: BLE001 - a bad DAG or job file: show the user's traceback
        click.echo(traceback.format_exc(), err=True)
        sys.exit(1)
    log.info("job completed in %.2f s", time.perf_counter() - started)


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
@click.option("--entrypoint", default="dag", help="Name of the DAG (or function returning one) in the job file.")
@click.option("--exit-with-parent", is_flag=True, hidden=True,
              help="Die with the parent process (used by the local cluster).")
@click.argument("args", nargs=-1)
def member(port: int | None, http_port: int | None, host: str | None, peers: str | None,
           replicas: int | None, member_index: int | None, config_file: str | None, threads: int | None,
           pipeline: str | None, entrypoint: str, exit_with_parent: bool, args: tuple[str, ...]) -> None:
    """Run one cluster member until SIGTERM; ARGS go to the --pipeline job file.

    The cluster token comes from $JET_CLUSTER_TOKEN or the file named by $JET_CLUSTER_TOKEN_FILE."""
    from jet.cluster.member_main import run_member
    if exit_with_parent:
        from jet.cluster.parent_watch import exit_with_parent as watch_parent
        watch_parent()
    job_supplier = (lambda: load_job_file(pipeline, args, entrypoint)) if pipeline else None
    flags = {"port": port, "http_port": http_port, "host": host, "peers": peers, "replicas": replicas,
             "member_index": member_index, "cooperative_threads": threads}
    sys.exit(run_member(flags, config_file, job_supplier))


if __name__ == "__main__":
    main()
