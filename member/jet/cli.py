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


def load_job_file(path: str, args: tuple[str, ...]) -> DAG:
    """Run the job file and return the DAG it defines as ``dag`` (a DAG or a function
    that takes the script's extra arguments and returns one)."""
    try:
        namespace = runpy.run_path(path, run_name="__jet_job__")
    except FileNotFoundError:
        raise click.UsageError(f"job file {path!r} does not exist") from None
    definition: Any = namespace.get("dag")
    if definition is None:
        raise click.UsageError(f"{path} defines no 'dag' (a DAG, or a function returning one)")
    dag = definition(*args) if callable(definition) and not isinstance(definition, DAG) else definition
    if not isinstance(dag, DAG):
        raise click.UsageError(f"'dag' in {path} gave {type(dag).__name__}, expected a jet.core.DAG")
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


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, help="The JetJob's name (a DNS label).")
@click.option("--replicas", type=click.IntRange(min=1), default=2, show_default=True,
              help="Member pods.")
@click.option("--image", default=None, help="The image of the members (default: the project's).")
@click.option("--entrypoint", default="pipeline", show_default=True,
              help="The name FILE defines the job under.")
@click.argument("args", nargs=-1)
def manifest(file: str, name: str, replicas: int, image: str | None, entrypoint: str,
             args: tuple[str, ...]) -> None:
    """Print a JetJob manifest running FILE (inlined), ready for ``kubectl apply -f -``."""
    from jet_operator.constants import DEFAULT_IMAGE
    from jet_operator.manifest import build_jetjob_manifest

    click.echo(build_jetjob_manifest(file, name, replicas, image or DEFAULT_IMAGE, entrypoint, args),
               nl=False)


if __name__ == "__main__":
    main()
