"""``jet job``: list and steer the jobs of a running cluster through its member 0.

    jet job --address 10.0.0.5:5701 list
    jet job status word-count
    jet job suspend word-count && jet job resume word-count
    jet job export-snapshot word-count v1 && jet job snapshots

A job is named by its id or its name (the newest job of that name). The cluster token comes from
``--token-file`` or ``$JET_CLUSTER_TOKEN[_FILE]``, the address from ``--address`` or
``$JET_ADDRESS``.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from typing import Any, Callable

import click

JOB_EPILOG = """\b
Exit codes:
  0    done (suspend: the job is SUSPENDED; resume, restart, cancel: asked for)
  1    the coordinator refused or the operation failed (the job's state does not allow it, a
       snapshot failed); the reason is printed
  2    usage error, or no job of that id or name
  3    the cluster could not be reached, or its token is missing or wrong
"""
EXIT_DONE = 0
EXIT_REFUSED = 1
EXIT_UNKNOWN = 2
EXIT_UNREACHABLE = 3
DEFAULT_ADDRESS = "127.0.0.1:5701"
ADDRESS_ENV = "JET_ADDRESS"


@click.group(epilog=JOB_EPILOG)
@click.option("--address", default=None, metavar="HOST:PORT",
              help=f"Member 0's gRPC address [default: ${ADDRESS_ENV}, else {DEFAULT_ADDRESS}].")
@click.option("--token-file", default=None, type=click.Path(dir_okay=False),
              help="File holding the cluster token [default: $JET_CLUSTER_TOKEN or $JET_CLUSTER_TOKEN_FILE].")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds to wait for the cluster (and for a suspend to finish).")
@click.pass_context
def job(ctx: click.Context, address: str | None, token_file: str | None, timeout: float) -> None:
    """List and steer the jobs of a running cluster."""
    ctx.obj = {"address": address or os.environ.get(ADDRESS_ENV) or DEFAULT_ADDRESS, "token_file": token_file,
               "timeout": timeout}


def _with_client(ctx: click.Context, action: Callable[[Any], None]) -> None:
    """Run ``action(client)``, turning the client's errors into messages and exit codes."""
    from jet.cluster.client import JetClient
    from jet.cluster.coordination.job_history import UnknownJobError
    from jet.cluster.coordination.job_state import JobStateError
    from jet.cluster.links.auth import CredentialsError, load_cluster_token
    from jet.cluster.links.transport import ControlCallError
    from jet.execution import JobTimeoutError
    from jet.snapshot import SnapshotError

    options = ctx.obj
    try:
        token = load_cluster_token(_read(options["token_file"]) if options["token_file"] else None)
        client = JetClient(options["address"], token)
    except (CredentialsError, OSError, ValueError) as error:
        _exit(EXIT_UNREACHABLE, f"jet job: {error}")
    try:
        client.ping(timeout_s=options["timeout"], wait_for_ready=True)  # --timeout bounds the wait for it
        action(client)
    except UnknownJobError as error:
        _exit(EXIT_UNKNOWN, f"jet job: {error}")
    except (JobStateError, SnapshotError, JobTimeoutError, ValueError) as error:
        _exit(EXIT_REFUSED, f"jet job: {error}")
    except ControlCallError as error:
        _exit(EXIT_UNREACHABLE, f"jet job: cannot reach the cluster at {options['address']}: {error}")
    finally:
        client.close()


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def _exit(code: int, message: str) -> None:
    click.echo(message, err=True)
    sys.exit(code)


@job.command("list", epilog=JOB_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line instead of a table.")
@click.pass_context
def list_jobs(ctx: click.Context, as_json: bool) -> None:
    """The jobs the coordinator keeps, oldest first."""
    def show(client: Any) -> None:
        infos = [listed.summary for listed in client.list_jobs()]
        if as_json:
            for info in infos:
                click.echo(json.dumps(info))
            return
        rows = [(info["jobId"], info["name"], info["status"], info["processingGuarantee"], str(info["restarts"]),
                 _snapshot_text(info.get("lastSnapshot"))) for info in infos]
        _table(("ID", "NAME", "STATUS", "GUARANTEE", "RESTARTS", "LAST SNAPSHOT"), rows)
    _with_client(ctx, show)


@job.command(epilog=JOB_EPILOG)
@click.argument("job_ref", metavar="ID|NAME")
@click.pass_context
def status(ctx: click.Context, job_ref: str) -> None:
    """The job's record as JSON (status, restarts, last snapshot, failure)."""
    _with_client(ctx, lambda client: click.echo(json.dumps(client.job(job_ref).summary, indent=2)))


def _job_action(name: str, help_text: str, act: Callable[[Any, float], str]) -> None:
    @job.command(name, help=help_text, epilog=JOB_EPILOG)
    @click.argument("job_ref", metavar="ID|NAME")
    @click.pass_context
    def command(ctx: click.Context, job_ref: str) -> None:
        def run(client: Any) -> None:
            found = client.job(job_ref)
            click.echo(f"job {found.name} ({found.id}): {act(found, ctx.obj['timeout'])}")
        _with_client(ctx, run)


def _suspend(found: Any, timeout: float) -> str:
    found.suspend(timeout)
    return "SUSPENDED"


def _restart(found: Any, timeout: float) -> str:
    found.restart()
    return "restarting"


def _cancel(found: Any, timeout: float) -> str:
    found.cancel()
    return "cancelled"


_job_action("suspend", "Suspend the job (a terminal snapshot with a processing guarantee); waits for SUSPENDED.",
            _suspend)


@job.command("resume", epilog=JOB_EPILOG)
@click.argument("job_ref", metavar="ID|NAME")
@click.option("--older-snapshot", is_flag=True,
              help="From the snapshot before the last good one (when that one is damaged); what"
                   " exactly-once sinks committed after it is produced again.")
@click.pass_context
def resume(ctx: click.Context, job_ref: str, older_snapshot: bool) -> None:
    """Resume a suspended job from its last snapshot."""
    def run(client: Any) -> None:
        found = client.job(job_ref)
        found.resume(older_snapshot)
        click.echo(f"job {found.name} ({found.id}): resumed{' from its older snapshot' if older_snapshot else ''}")
    _with_client(ctx, run)


_job_action("restart", "Restart the job from a terminal snapshot.", _restart)
_job_action("cancel", "Cancel the job for good (its snapshots go; exported ones stay).", _cancel)


@job.command("export-snapshot", epilog=JOB_EPILOG)
@click.argument("job_ref", metavar="ID|NAME")
@click.argument("name")
@click.option("--cancel", "and_cancel", is_flag=True, help="Then cancel the job (cancel_and_export_snapshot).")
@click.pass_context
def export_snapshot(ctx: click.Context, job_ref: str, name: str, and_cancel: bool) -> None:
    """Export the job's state as the snapshot NAME (a new job starts from it with
    initial_snapshot_name, or `jet member --initial-snapshot-name`)."""
    def run(client: Any) -> None:
        found = client.job(job_ref)
        info = found.cancel_and_export_snapshot(name) if and_cancel else found.export_snapshot(name)
        click.echo(f"job {found.name} ({found.id}): snapshot {info['snapshotId']} exported as {name!r} "
                   f"({info['bytes']} bytes, {info['keys']} keys){'; the job is cancelled' if and_cancel else ''}")
    _with_client(ctx, run)


@job.command("delete-snapshot", epilog=JOB_EPILOG)
@click.argument("name")
@click.pass_context
def delete_snapshot(ctx: click.Context, name: str) -> None:
    """Delete the exported snapshot NAME from the cluster's snapshot store."""
    def run(client: Any) -> None:
        client.delete_snapshot(name)
        click.echo(f"snapshot {name!r} deleted")
    _with_client(ctx, run)


@job.command(epilog=JOB_EPILOG)
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line instead of a table.")
@click.pass_context
def snapshots(ctx: click.Context, as_json: bool) -> None:
    """The exported snapshots in the cluster's snapshot store."""
    def show(client: Any) -> None:
        exported = client.snapshots()
        if as_json:
            for info in exported:
                click.echo(json.dumps(info))
            return
        _table(("NAME", "JOB", "JOB NAME", "SNAPSHOT", "BYTES", "KEYS", "CREATED"),
               [(s["name"], s["jobId"], s["jobName"], str(s["snapshotId"]), str(s["bytes"]), str(s["keys"]),
                 datetime.fromtimestamp(s["created"], timezone.utc).isoformat(timespec="seconds"))
                for s in exported])
    _with_client(ctx, show)


def _snapshot_text(snapshot: dict[str, Any] | None) -> str:
    if not snapshot:
        return "-"
    return f"#{snapshot['id']} {snapshot['time']} {snapshot['bytes']} B {snapshot['durationMs']} ms"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        click.echo("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
