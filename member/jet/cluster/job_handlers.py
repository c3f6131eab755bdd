"""The coordinator's job API on member 0 (Jet's client operations): submit, status, wait,
cancel, the job requests, results, metrics and observable items; members report their
executions' ends here. Another member refuses it, naming member 0."""

from __future__ import annotations

import cloudpickle

from jet.cluster.coordination.coordinator import JobCoordinator
from jet.cluster.coordination.job_state import JobConfigError, JobStateError
from jet.cluster.executions.observables import READ_MAX_ITEMS, READ_WAIT_S, UnknownObservableError
from jet.cluster.executions.outcome import ExecutionOutcome, decode_report
from jet.cluster.links import messages
from jet.cluster.links.packets import PacketFormatError
from jet.cluster.links.server_limits import Slots
from jet.core.dag import DagValidationError
from jet.execution.measurements import pack_measurements
from jet.snapshot import SnapshotError

MAX_WAIT_S = 30.0
"""The longest a waiting call (``job_wait``, ``observable_read``, ``ping``) holds its thread."""
WAITING_CALLS = 12
"""Clients' calls that wait (``job_wait``, ``observable_read``) at once, of the server's
``max_client_calls`` (32): the rest always serve calls that answer at once, so however many
clients wait on their jobs, another client's submit or status goes through. A waiting call
beyond it is answered at once with ``"waited": false``, and the client asks again after
:data:`~jet.cluster.executions.observables.POLL_PAUSE_S`."""
_EXPORTS = ("export_snapshot", "cancel_and_export")


class JobApi:
    """The job handlers of one member, over its coordinator (None on every member but member 0)."""

    def __init__(self, index: int, member_count: int, coordinator: JobCoordinator | None) -> None:
        self.index = index
        self.member_count = member_count
        self.coordinator = coordinator
        self._waits = Slots(WAITING_CALLS)

    def require_coordinator(self) -> JobCoordinator:
        if self.coordinator is None:
            raise PermissionError(f"member {self.index} is not the coordinator; send jobs to member 0")
        return self.coordinator

    def submit(self, peer: int, header: dict, blob: bytes) -> dict:
        coordinator = self.require_coordinator()
        try:
            return {"job_id": coordinator.submit(blob, header.get("config"))}
        except (DagValidationError, JobConfigError) as e:
            return {"error": type(e).__name__, "message": str(e)}

    def job_status(self, peer: int, header: dict, blob: bytes) -> dict:
        """A job's record by its id (``job_id``), or by its id or name (``job``)."""
        coordinator = self.require_coordinator()
        if "job" in header:
            return coordinator.find(messages.require(header, "job", str)).to_header()
        return coordinator.record(messages.require(header, "job_id", str)).to_header()

    def job_control(self, peer: int, header: dict, blob: bytes) -> dict:
        """suspend, resume, restart, export_snapshot or cancel_and_export; a request the job's
        state does not allow is answered with ``error`` (the client raises it)."""
        coordinator = self.require_coordinator()
        job_id, action = messages.require(header, "job_id", str), messages.require(header, "action", str)
        try:
            if action in _EXPORTS:
                return {"snapshot": coordinator.export_snapshot(job_id, messages.require(header, "name", str),
                                                                cancel=action == "cancel_and_export")}
            if action == "resume":
                return coordinator.resume(job_id, bool(header.get("older_snapshot"))).to_header()
            operation = {"suspend": coordinator.suspend, "restart": coordinator.restart}.get(action)
            if operation is None:
                raise ValueError(f"job_control: unknown action {action!r}; known: suspend, resume, restart, "
                                 f"{', '.join(_EXPORTS)}")
            return operation(job_id).to_header()
        except (JobStateError, SnapshotError, ValueError) as e:
            return {"error": type(e).__name__, "message": str(e)}

    def list_jobs(self, peer: int, header: dict, blob: bytes) -> dict:
        return {"jobs": self.require_coordinator().job_headers()}

    def delete_snapshot(self, peer: int, header: dict, blob: bytes) -> dict:
        """Delete an exported snapshot; a name there is none of is answered with ``error``."""
        name = messages.require(header, "name", str)
        try:
            self.require_coordinator().delete_snapshot(name)
        except (SnapshotError, ValueError) as e:
            return {"error": type(e).__name__, "message": str(e)}
        return {"deleted": name}

    def list_snapshots(self, peer: int, header: dict, blob: bytes) -> dict:
        return {"snapshots": self.require_coordinator().snapshots()}

    def job_wait(self, peer: int, header: dict, blob: bytes) -> dict:
        timeout_s = min(float(header.get("timeout_s", MAX_WAIT_S)), MAX_WAIT_S)
        job_id = messages.require(header, "job_id", str)
        give_back = self._waits.take()
        if give_back is None:  # every waiting slot is taken: the answer now, and the client asks again
            return {**self.require_coordinator().wait(job_id, 0.0).to_header(), "waited": False}
        try:
            return self.require_coordinator().wait(job_id, timeout_s).to_header()
        finally:
            give_back()

    def cancel_job(self, peer: int, header: dict, blob: bytes) -> dict:
        """Cancel a job; one that already ended is answered with ``error`` (the client raises it)."""
        try:
            return self.require_coordinator().cancel(messages.require(header, "job_id", str)).to_header()
        except JobStateError as e:
            return {"error": type(e).__name__, "message": str(e)}

    def execution_done(self, peer: int, header: dict, blob: bytes) -> dict:
        outcome = ExecutionOutcome.from_header(header)
        if peer not in (outcome.member, 0) or peer >= self.member_count:
            raise PermissionError(f"member {peer} reported the outcome of member {outcome.member}")
        self.require_coordinator().on_execution_done(*decode_report(header, blob))
        return {}

    def job_metrics(self, peer: int, header: dict, blob: bytes) -> dict:
        job_id = messages.require(header, "job_id", str)
        if header.get("measurements"):
            return {"measurements": pack_measurements(self.require_coordinator().measurements(job_id))}
        return {"metrics": self.require_coordinator().metrics(job_id)}

    def job_results(self, peer: int, header: dict, blob: bytes) -> tuple[dict, bytes]:
        """Every member's pickled results one after another, their lengths in ``parts``."""
        try:
            parts, final = self.require_coordinator().fetch_results(messages.require(header, "job_id", str))
        except JobStateError as e:  # released (max_finished_result_bytes): the client raises it
            return {"error": type(e).__name__, "message": str(e)}, b""
        return ({"parts": [part.size_bytes for part in parts], "final": final},
                b"".join(part.data for part in parts))

    def observable_items(self, peer: int, header: dict, blob: bytes) -> dict:
        items = cloudpickle.loads(blob) if blob else []  # from an authenticated member
        self.require_coordinator().observable_publish(
            messages.require(header, "job_id", str), messages.require(header, "name", str),
            messages.require(header, "capacity", int), items)
        return {}

    def observable_read(self, peer: int, header: dict, blob: bytes) -> tuple[dict, bytes]:
        wait_s = min(float(header.get("wait_s", READ_WAIT_S)), MAX_WAIT_S)
        max_items = max(1, min(int(header.get("max_items", READ_MAX_ITEMS)), READ_MAX_ITEMS))
        from_sequence = messages.require(header, "from", int)
        if from_sequence < 0:
            raise PacketFormatError(f"observable_read: 'from' must be a sequence number >= 0, got {from_sequence}")
        give_back = self._waits.take() if wait_s > 0 else (lambda: None)
        try:
            items, reply = self.require_coordinator().observable_read(
                messages.require(header, "job_id", str), messages.require(header, "name", str),
                from_sequence, max_items, wait_s if give_back is not None else 0.0)
        except UnknownObservableError as e:
            return {"error": type(e).__name__, "message": str(e)}, b""
        finally:
            if give_back is not None:
                give_back()
        if give_back is None:
            reply = {**reply, "waited": False}
        return reply, cloudpickle.dumps(items) if items else b""
