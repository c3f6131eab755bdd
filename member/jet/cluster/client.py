"""The client: submit jobs to a cluster's coordinator (member 0) and follow them.

    with jet.connect(["10.0.0.5:5701"]) as client:
        job = client.new_job(dag)
        job.join()

Every call carries the cluster token (``token=`` or ``load_cluster_token()``), so a member
authenticates the client before reading anything it sends. Replies are JSON, except the job's
named results (:meth:`Job.results`), which only a client asking for them unpickles.
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import cloudpickle
import grpc

from jet.cluster.coordination.job_history import UnknownJobError
from jet.cluster.coordination.job_state import JobConfigError, JobStateError, JobStatus, job_failure
from jet.cluster.executions.observables import POLL_PAUSE_S, READ_WAIT_S, ObservableIterator, UnknownObservableError
from jet.cluster.executions.outcome import PickledResults, merge_results
from jet.cluster.links import messages
from jet.cluster.links.auth import TlsConfig, load_cluster_token
from jet.cluster.links.transport import ControlCallError, PeerConnection
from jet.core.dag import DAG, DagValidationError
from jet.execution.errors import JobTimeoutError
from jet.execution.measurements import unpack_measurements
from jet.job_config import JobConfig
from jet.snapshot import SnapshotError

CALL_TIMEOUT_S = 30.0
WAIT_SLICE_S = 10.0
COORDINATOR_BACK_WAIT_S = 120.0
"""How long ``join`` waits for a member 0 that does not answer (it restarts, as a pod is
recreated, and takes its jobs over from the snapshot store) before it raises."""
RETRY_PAUSE_S = 0.25
EXPORT_TIMEOUT_S = 300.0
"""How long ``export_snapshot`` waits for the coordinator (a snapshot of the running job, then its copy)."""
STATUS_POLL_S = 0.1
_REPLY_ERRORS = {cls.__name__: cls for cls in (DagValidationError, JobConfigError, JobStateError, SnapshotError,
                                               ValueError)}
"""The errors a coordinator answers in its reply's ``error`` field, raised here under their own type."""


class Job:
    """A submitted job; its state lives on the coordinator."""

    def __init__(self, client: "JetClient", job_id: str, name: str, summary: dict[str, Any] | None = None) -> None:
        self._client = client
        self.id = job_id
        self.name = name
        self.summary = summary
        """The job's record when this object was made by ``list_jobs`` or ``job`` (else None)."""
        self._final_results: dict[str, list] | None = None

    @property
    def status(self) -> JobStatus:
        """The job's current status, fresh from the coordinator."""
        return JobStatus(self.info()["status"])

    def info(self) -> dict[str, Any]:
        """The coordinator's record of the job (``jobId``, ``status``, ``message``, times, ``failure``)."""
        return self._client._call(messages.JOB_STATUS, {"job_id": self.id})

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job to end. Raises :class:`JobFailedError` (``JobCancelledError`` when it was
        cancelled) carrying the original traceback text and ``member_index``, or
        :class:`JobTimeoutError` when ``timeout`` seconds pass first (the job keeps running).

        Without ``timeout`` it waits as long as the job runs, in bounded slices: each ``job_wait``
        call has a deadline (a coordinator that stops answering raises ``ControlCallError``), and
        every wait of the coordinator is bounded, so a job whose members stop answering ends
        FAILED naming them rather than leaving this call waiting. A member 0 that does not answer
        (it restarts, and takes its jobs over from the snapshot store) is waited for up to
        :data:`COORDINATOR_BACK_WAIT_S`; then its ``ControlCallError`` is raised."""
        deadline = None if timeout is None else time.monotonic() + timeout
        unavailable_since: float | None = None
        while True:
            remaining = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
            if remaining <= 0:
                raise JobTimeoutError(f"job {self.name} ({self.id}) did not finish within {timeout} s", [])
            try:
                info = self._client._call(messages.JOB_WAIT, {"job_id": self.id, "timeout_s": remaining},
                                          timeout_s=remaining + CALL_TIMEOUT_S)
            except ControlCallError as error:
                # Member 0 restarting (down, or reading its job records): the job goes on there.
                if error.code is not grpc.StatusCode.UNAVAILABLE:
                    raise
                unavailable_since = unavailable_since or time.monotonic()
                if time.monotonic() - unavailable_since > COORDINATOR_BACK_WAIT_S:
                    raise
                time.sleep(min(RETRY_PAUSE_S, max(0.0, remaining)))
                continue
            unavailable_since = None
            status = JobStatus(info["status"])
            if status is JobStatus.COMPLETED:
                return
            if status is JobStatus.FAILED:
                raise job_failure(info)
            if info.get("waited") is False:  # member 0 had no waiting slot free: ask again in a while
                time.sleep(min(POLL_PAUSE_S, max(0.0, remaining)))

    def metrics(self) -> dict[str, dict[str, int]]:
        """Each vertex's figures over the whole cluster so far (``{"in": n, "out": m, ...}``, the
        keys and merge rules of :mod:`jet.execution.vertex_metrics`); a finished job's last ones
        while the coordinator keeps it."""
        return self._client._call(messages.JOB_METRICS, {"job_id": self.id})["metrics"]

    def measurements(self) -> list[dict]:
        """Every member's measurements of the job (Jet's ``JobMetrics``): each
        ``{"metric": name, "value": int, "tags": {...}}`` as :mod:`jet.execution.measurements` says."""
        return unpack_measurements(
            self._client._call(messages.JOB_METRICS, {"job_id": self.id, "measurements": True})["measurements"])

    def results(self) -> dict[str, list]:
        """The named results of the job's ``Sinks.list`` sinks, every member's, in member order.

        This is the one reply a client unpickles: it comes from the member 0 the client
        authenticated to with the cluster token (use TLS where the network is not trusted).
        A finished job's results are kept by this object once fetched: the coordinator lets
        them go ``fetched_result_ttl_s`` after that first fetch."""
        if self._final_results is not None:
            return self._final_results
        header, blob = self._client._call_raw(messages.JOB_RESULTS, {"job_id": self.id})
        parts, start = [], 0
        for size in header.get("parts", []):
            parts.append(PickledResults(blob[start:start + size]))
            start += size
        results = merge_results(parts)
        if header.get("final"):
            self._final_results = results
        return results

    def result(self, name: str = "default") -> list:
        """The items the job's ``Sinks.list(name)`` collected, from every member."""
        results = self.results()
        if name not in results:
            raise KeyError(f"job {self.name} has no result named {name!r}; its results are"
                           f" {sorted(results)}")
        return results[name]

    def observable(self, name: str) -> ObservableIterator:
        """The items of the job's ``Sinks.observable(name)`` as they come, from the first one
        member 0 still keeps. The iterator ends when the job has completed and everything was
        read; when the job failed or was cancelled it raises that error (``JobFailedError``,
        ``JobCancelledError``) after the items that came before. Each ``observable`` call is
        a reader of its own. :class:`UnknownObservableError` when the job has no such sink."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"job.observable needs the name of a Sinks.observable sink, got {name!r}")

        def read(from_sequence: int, wait_s: float = READ_WAIT_S) -> tuple[dict[str, Any], list]:
            header, blob = self._client._call_raw(
                messages.OBSERVABLE_READ, {"job_id": self.id, "name": name, "from": from_sequence,
                                           "wait_s": wait_s}, timeout_s=wait_s + CALL_TIMEOUT_S)
            if header.get("error") == UnknownObservableError.__name__:
                raise UnknownObservableError(header.get("message", name))
            return header, cloudpickle.loads(blob) if blob else []  # from member 0, like results()

        first = read(0, 0.0)  # an unknown job or observable fails here, not at the first next()
        return ObservableIterator(read, name, job_failure, first)

    def cancel(self) -> None:
        """Cancel the job on every member; it ends FAILED with :class:`JobCancelledError` (its
        record and snapshots are deleted; exported snapshots stay)."""
        self._client._call(messages.CANCEL_JOB, {"job_id": self.id})

    def suspend(self, timeout: float = CALL_TIMEOUT_S) -> None:
        """Suspend the job: with a processing guarantee a terminal snapshot is taken and the
        execution ends (a resume continues from it); without one the execution is cancelled (a
        resume starts it from scratch). Waits up to ``timeout`` s for SUSPENDED."""
        self._control("suspend")
        self._await_status(lambda status: status.is_suspended or status.is_terminal, timeout, "SUSPENDED")

    def resume(self, older_snapshot: bool = False) -> None:
        """Resume a SUSPENDED job from its last snapshot; :class:`JobStateError` when it is not
        suspended. ``older_snapshot``: from the snapshot before the last good one (when that one is
        damaged; ``SnapshotError`` when there is no older complete one). What exactly-once sinks
        committed after the older snapshot is produced again: they see it twice."""
        self._control("resume", {"older_snapshot": older_snapshot})

    def restart(self) -> None:
        """Stop the running execution (a terminal snapshot with a guarantee) and start a new one from it."""
        self._control("restart")

    def export_snapshot(self, name: str) -> dict[str, Any]:
        """Take a snapshot of the running job (or use a suspended job's last one) and keep it as
        the exported snapshot ``name`` (replacing one of that name), for ``initial_snapshot_name``.
        Returns its figures (``name``, ``jobId``, ``snapshotId``, ``bytes``, ``keys``)."""
        return self._control("export_snapshot", {"name": name}, timeout_s=EXPORT_TIMEOUT_S)["snapshot"]

    def cancel_and_export_snapshot(self, name: str) -> dict[str, Any]:
        """Export a terminal snapshot as ``name``, then cancel the job (if that snapshot fails the
        job is suspended instead). Returns the export's figures."""
        return self._control("cancel_and_export", {"name": name}, timeout_s=EXPORT_TIMEOUT_S)["snapshot"]

    def _control(self, action: str, extra: dict[str, Any] | None = None,
                 timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        return self._client._call(messages.JOB_CONTROL, {"job_id": self.id, "action": action, **(extra or {})},
                                  timeout_s=timeout_s)

    def _await_status(self, reached, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not reached(status := self.status):
            if time.monotonic() > deadline:
                raise JobTimeoutError(f"job {self.name} ({self.id}) was not {what} within {timeout_s} s "
                                      f"(it is {status.value})", [])
            time.sleep(STATUS_POLL_S)

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, name={self.name!r})"


def as_dag(job: Any) -> DAG:
    """The DAG to submit: a DAG as it is; a Pipeline (anything with ``to_dag``) checked with its
    ``preflight`` and planned, leaving parallelism to each member's default."""
    if isinstance(job, DAG):
        return job
    to_dag = getattr(job, "to_dag", None)
    if not callable(to_dag):
        hint = (f": call it, new_job({job.__name__}(...)), to get the Pipeline it returns"
                if callable(job) and hasattr(job, "__name__") else "")
        raise TypeError(f"new_job() needs a jet.Pipeline or a jet.core.DAG, got {type(job).__name__} "
                        f"{getattr(job, '__name__', '')!r}{hint}".replace(" ''", ""))
    preflight = getattr(job, "preflight", None)
    if callable(preflight):
        preflight()
    return to_dag()


class JetClient:
    """A connection to a cluster's coordinator, member 0 (``addresses[0]``)."""

    def __init__(self, addresses: Sequence[str] | str, token: str | None = None,
                 tls: TlsConfig | None = None) -> None:
        if isinstance(addresses, str):
            addresses = [a for a in addresses.split(",") if a.strip()]
        if not addresses:
            raise ValueError("connect() needs the address of member 0 (host:port), got none")
        self.addresses = list(addresses)
        self._connection = PeerConnection(self.addresses[0], messages.CLIENT_INDEX, 0,
                                          load_cluster_token(token), tls, open_stream=False)

    def new_job(self, job: Any, config: JobConfig | Mapping[str, Any] | None = None) -> Job:
        """Submit a ``jet.Pipeline`` or a core ``DAG``; a malformed one is refused before anything
        runs (DagValidationError, or the pipeline's own error naming the stage, source or sink).

        ``config``: a :class:`~jet.job_config.JobConfig` or a mapping of its fields, e.g.
        ``{"name": "word-count", "processing_guarantee": "exactly-once"}`` (a bad field raises
        ``ValueError`` naming it; a guarantee on a cluster without a snapshot store raises
        :class:`JobConfigError`)."""
        job_config = JobConfig.of(config)
        dag = as_dag(job)
        reply = self._call(messages.SUBMIT, {"config": job_config.to_dict()}, cloudpickle.dumps(dag))
        job_id = messages.require(reply, "job_id", str)
        return Job(self, job_id, job_config.name or job_id)

    def job(self, job_id_or_name: str) -> Job:
        """The job with this id, else the newest of this name; :class:`UnknownJobError` when none."""
        info = self._call(messages.JOB_STATUS, {"job": job_id_or_name})
        return Job(self, info["jobId"], info["name"], info)

    def list_jobs(self) -> list[Job]:
        """Every job the coordinator keeps, oldest first (each with its record in ``summary``)."""
        return [Job(self, info["jobId"], info["name"], info)
                for info in self._call(messages.LIST_JOBS, {})["jobs"]]

    def snapshots(self) -> list[dict[str, Any]]:
        """The exported snapshots of the cluster's store: ``name``, ``jobId``, ``jobName``,
        ``snapshotId``, ``bytes``, ``keys``, ``chunks``, ``created`` (epoch seconds)."""
        return self._call(messages.LIST_SNAPSHOTS, {})["snapshots"]

    def delete_snapshot(self, name: str) -> None:
        """Delete the exported snapshot ``name`` from the cluster's store (``SnapshotError`` when
        there is none); jobs started from it before keep running."""
        self._call(messages.DELETE_SNAPSHOT, {"name": name})

    def ping(self, cluster: bool = False, timeout_s: float = 5.0, wait_for_ready: bool = False,
             ready_wait_s: float = 0.0) -> dict[str, Any]:
        """Member 0's ping reply; with ``cluster=True`` it says whether every member is connected.
        ``wait_for_ready``: wait up to ``timeout_s`` for member 0 to be reachable (else fail at once).
        ``ready_wait_s``: member 0 answers once connected (with ``cluster=True``: once every member
        is), or after this long."""
        header = {"cluster": cluster, **({"wait_s": ready_wait_s} if ready_wait_s else {})}
        return self._call(messages.PING, header, timeout_s=timeout_s + ready_wait_s, wait_for_ready=wait_for_ready)

    def _call(self, msg_type: str, header: dict[str, Any], blob: bytes = b"", *,
              timeout_s: float = CALL_TIMEOUT_S, wait_for_ready: bool = True) -> dict[str, Any]:
        return self._call_raw(msg_type, header, blob, timeout_s=timeout_s, wait_for_ready=wait_for_ready)[0]

    def _call_raw(self, msg_type: str, header: dict[str, Any], blob: bytes = b"", *,
                  timeout_s: float = CALL_TIMEOUT_S, wait_for_ready: bool = True) -> tuple[dict[str, Any], bytes]:
        try:
            reply = self._connection.control(msg_type, messages.encode_message(header, blob), timeout_s,
                                             wait_for_ready=wait_for_ready)
        except ControlCallError as e:
            if (e.details or "").startswith(f"{UnknownJobError.__name__}: "):
                raise UnknownJobError(e.details.split(": ", 1)[1]) from e
            raise
        header, blob = messages.decode_message(reply)
        error = _REPLY_ERRORS.get(header.get("error", ""))
        if error is not None:
            raise error(header.get("message", ""))
        return header, blob

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "JetClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(addresses: Sequence[str] | str, token: str | None = None, tls: TlsConfig | None = None) -> JetClient:
    """A client of the cluster whose member 0 is ``addresses[0]`` (token: argument or environment)."""
    return JetClient(addresses, token, tls)
