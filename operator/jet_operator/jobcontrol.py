"""Act on a running job through its coordinator (member 0): suspend, resume, restart, cancel,
export a snapshot, cancel with an exported snapshot; and delete exported snapshots from the
store. Jet's own client does the talking (gRPC with the cluster token; with TLS on, member 0's
certificate is verified with the job's CA under member 0's DNS name, whatever address is
dialled).

Each action waits, bounded, until ``/job`` shows its effect, so the operator changes the
members only once the job has stopped writing.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from jet_operator.lifecycle import JobReport

logger = logging.getLogger(__name__)

POLL_INTERVAL_SECONDS = 0.5
PING_TIMEOUT_SECONDS = 5.0
# /job statuses after which a job does nothing more until someone resumes or resubmits it.
STOPPED_JOB_STATUSES = frozenset({"COMPLETED", "FAILED", "SUSPENDED", "NOT_RUNNING"})


class JobControlError(Exception):
    """An action on the job failed or did not take effect in time; the message says which."""


@dataclass(frozen=True)
class ExportDeletion:
    """What became of exports asked to be deleted."""

    deleted: list[str]
    """Not in the store any more: deleted now, or gone already."""
    gone: list[str]
    """Of ``deleted``, those the store did not have."""
    error: str | None = None
    """Why the others were not deleted (member 0 not reached, a deletion failed)."""


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach a job's coordinator as a client."""

    address: str
    """``host:port`` of member 0's gRPC port."""
    token: str
    ca_pem: str | None
    """The job's CA certificate (PEM) when the members speak TLS."""
    server_name: str
    """The name member 0's certificate is verified for (its pod DNS name)."""


@contextlib.contextmanager
def _client(access: ClusterAccess) -> Iterator[Any]:
    from jet.cluster.client import connect  # the member package: in the operator's image too
    from jet.cluster.links.auth import TlsConfig

    with tempfile.TemporaryDirectory(prefix="jet-operator-") as directory:
        tls = None
        if access.ca_pem is not None:
            ca_file = Path(directory) / "ca.crt"
            ca_file.write_text(access.ca_pem)
            tls = TlsConfig(cert_file="", key_file="", ca_file=str(ca_file), server_name=access.server_name)
        with connect([access.address], access.token, tls) as client:
            yield client


class JobControl:
    """The actions; ``report`` reads member 0's ``/job`` (the effect of an action is read there)."""

    def __init__(self, access: ClusterAccess, report: Callable[[], JobReport | None],
                 timeout_seconds: float) -> None:
        self._access = access
        self._report = report
        self._timeout = timeout_seconds

    def suspend(self, job_id: str) -> JobReport:
        """Suspend the job with a terminal snapshot; returns the report once it is SUSPENDED."""
        self._act(job_id, "suspend", lambda job: job.suspend())
        return self._wait(lambda r: r.status == "SUSPENDED", f"job {job_id} to be SUSPENDED")

    def resume(self, job_id: str) -> None:
        """Resume a suspended job from its last snapshot (returns once asked: it restarts on its own)."""
        self._act(job_id, "resume", lambda job: job.resume())

    def cancel(self, job_id: str) -> JobReport:
        """Cancel the job (its record and snapshots go; exports stay)."""
        self._act(job_id, "cancel", lambda job: job.cancel())
        return self._wait(lambda r: r.status in STOPPED_JOB_STATUSES, f"job {job_id} to stop")

    def cancel_and_export(self, job_id: str, snapshot_name: str) -> JobReport:
        """Export a terminal snapshot named ``snapshot_name`` and cancel the job."""
        self._act(job_id, f"cancel with snapshot {snapshot_name!r}",
                  lambda job: job.cancel_and_export_snapshot(snapshot_name))
        return self._wait(lambda r: r.status in STOPPED_JOB_STATUSES, f"job {job_id} to stop")

    def restart(self, job_id: str) -> None:
        """Restart the job: its execution stops (with a terminal snapshot when it has a
        guarantee) and a new one starts from there (returns once asked)."""
        self._act(job_id, "restart", lambda job: job.restart())

    def export(self, job_id: str, snapshot_name: str) -> dict[str, Any]:
        """Export a snapshot of the running (or suspended) job as ``snapshot_name``; the job goes
        on. Returns the export's figures (``name``, ``jobId``, ``snapshotId``, ``bytes``, ``keys``)."""
        return dict(self._act(job_id, f"export snapshot {snapshot_name!r}",
                              lambda job: job.export_snapshot(snapshot_name)) or {})

    def delete_exports(self, names: list[str]) -> ExportDeletion:
        """Delete the exported snapshots ``names`` from the store, in order; one the store does
        not have counts as deleted. Stops at the first failure (member 0 not reached, or a
        deletion refused): the rest are not deleted, ``error`` says why."""
        from jet.cluster.client import SnapshotError  # what delete_snapshot raises for no such export

        deleted: list[str] = []
        gone: list[str] = []

        def delete(client: Any) -> None:
            for name in names:
                try:
                    client.delete_snapshot(name)
                except SnapshotError:
                    gone.append(name)
                deleted.append(name)

        try:
            self._call(f"delete exported snapshot(s) {', '.join(names)}", delete)
        except JobControlError as error:
            return ExportDeletion(deleted, gone, str(error))
        return ExportDeletion(deleted, gone)

    def _act(self, job_id: str, what: str, action: Callable[[Any], Any]) -> Any:
        return self._call(f"{what} of job {job_id}", lambda client: action(client.job(job_id)))

    def _call(self, what: str, action: Callable[[Any], Any]) -> Any:
        try:
            with _client(self._access) as client:
                # Fails at once when member 0 cannot be reached (a call would wait for it 30 s).
                client.ping(timeout_s=PING_TIMEOUT_SECONDS)
                result = action(client)
        except Exception as error:  # noqa: BLE001 - any client failure: one clear message
            raise JobControlError(f"{what} at {self._access.address} failed: {error}") from error
        logger.info("Asked member 0 at %s to %s", self._access.address, what)
        return result

    def _wait(self, done: Callable[[JobReport], bool], what: str) -> JobReport:
        deadline = time.monotonic() + self._timeout
        last = None
        while time.monotonic() < deadline:
            last = self._report()
            if last is not None and done(last):
                return last
            time.sleep(POLL_INTERVAL_SECONDS)
        seen = f"last seen {last.status}" if last is not None else "member 0 not answering"
        raise JobControlError(f"timed out after {self._timeout:.0f}s waiting for {what} ({seen})")
