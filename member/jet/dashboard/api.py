"""The dashboard's JSON API (``/api/...``) over one member; member 0 answers for the cluster.

=========================================== ==================================================
``GET /api/cluster``                        this member, and on member 0 every member: index,
                                            address, state, load (CPU seconds, RSS, executions)
``GET /api/jobs``                           every job kept (member 0): id, name, status, times
``GET /api/jobs/<id>``                      a job's record, error, snapshots, DAG and figures
``POST /api/jobs/<id>/<action>``            suspend, resume, restart, cancel
``POST /api/jobs/<id>/export-snapshot``     body ``{"name": ..., "cancel": false}``
=========================================== ==================================================

A refused action (the job's status does not allow it) is 409 with the reason; jobs asked of a
member other than member 0 are 404 saying that member 0 has them.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from jet.cluster.coordination.job_history import UnknownJobError
from jet.cluster.coordination.job_state import JobStateError
from jet.cluster.links import messages
from jet.dashboard.job_view import job_detail
from jet.dashboard.load import process_load
from jet.dashboard.member_view import MemberView
from jet.snapshot.errors import SnapshotError

log = logging.getLogger("jet.dashboard")

#: How long member 0 waits for another member's load.
LOAD_TIMEOUT_S = 2.0

ACTIONS = ("suspend", "resume", "restart", "cancel", "export-snapshot")


class ApiError(Exception):
    """An API request answered with ``code`` and ``{"error": message}``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class DashboardApi:
    """The API over a member's :class:`~jet.dashboard.member_view.MemberView` (its index,
    addresses, executions, connections and, on member 0, its coordinator)."""

    def __init__(self, member: MemberView) -> None:
        self._member = member

    def load(self) -> dict[str, Any]:
        """This member's load."""
        return process_load(len(self._member.executions))

    def cluster(self) -> dict[str, Any]:
        """This member's view of the cluster; member 0 adds every member's load and the jobs."""
        member = self._member
        coordinator = member.coordinator
        joined = set(member.membership.joined_peers())
        loads = self._peer_loads(joined) if coordinator is not None else {}
        rows = []
        for index, address in enumerate(member.addresses):
            if index == member.index:
                state, load = "UP", self.load()
            else:
                state, load = ("UP" if index in joined else "NOT CONNECTED"), loads.get(index)
            rows.append({"index": index, "address": str(address), "state": state, "load": load,
                         "self": index == member.index})
        return {"member": member.index, "memberCount": member.member_count, "coordinator": coordinator is not None,
                "members": rows, "jobs": self.jobs()["jobs"] if coordinator is not None else None}

    def _peer_loads(self, peers: set[int]) -> dict[int, dict[str, Any]]:
        """Every connected peer's load, asked at once with a ``ping``; a peer that does not answer is left out."""
        connections = {peer: connection for peer, connection in list(self._member.connections.items())
                       if peer in peers}
        if not connections:
            return {}
        payload = messages.encode_message({"load": True})

        def ask(connection: Any) -> dict[str, Any] | None:
            try:
                reply = connection.control(messages.PING, payload, LOAD_TIMEOUT_S, wait_for_ready=False)
                return messages.decode_message(reply)[0].get("load")
            except Exception as e:  # noqa: BLE001 - a load is best effort
                log.debug("no load from a member: %s", e)
                return None

        with ThreadPoolExecutor(max_workers=len(connections), thread_name_prefix="jet-dash-load") as pool:
            answers = dict(zip(connections, pool.map(ask, connections.values())))
        return {peer: load for peer, load in answers.items() if load is not None}

    def jobs(self) -> dict[str, Any]:
        """Every job the coordinator keeps, newest first."""
        headers = self._coordinator().job_headers()
        return {"jobs": [{key: header.get(key) for key in _JOB_LIST_FIELDS} for header in reversed(headers)]}

    def job(self, job_id: str) -> dict[str, Any]:
        """One job: its record, error, snapshots, DAG and figures."""
        coordinator = self._coordinator()
        try:
            return job_detail(coordinator, job_id, self._member.threads)
        except UnknownJobError as e:
            raise ApiError(404, str(e)) from None

    def act(self, job_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        """Run ``action`` on the job; 409 with the reason when its status does not allow it."""
        coordinator = self._coordinator()
        operations: dict[str, Callable[[str], Any]] = {
            "suspend": coordinator.suspend, "resume": coordinator.resume, "restart": coordinator.restart,
            "cancel": coordinator.cancel}
        try:
            if action == "export-snapshot":
                name, cancel = body.get("name"), body.get("cancel", False)
                if not isinstance(cancel, bool):
                    raise ApiError(400, f"export-snapshot: 'cancel' must be true or false, got {cancel!r}")
                return {"snapshot": coordinator.export_snapshot(job_id, name, cancel=cancel)}
            operation = operations.get(action)
            if operation is None:
                raise ApiError(404, f"unknown job action {action!r}; known: {', '.join(ACTIONS)}")
            return {"job": operation(job_id).to_header()}
        except UnknownJobError as e:
            raise ApiError(404, str(e)) from None
        except (JobStateError, SnapshotError) as e:
            raise ApiError(409, str(e)) from None
        except ValueError as e:
            raise ApiError(400, str(e)) from None

    def _coordinator(self) -> Any:
        coordinator = self._member.coordinator
        if coordinator is None:
            raise ApiError(404, f"member {self._member.index} has no jobs: only member 0 (the coordinator, "
                                f"{self._member.addresses[0]}) serves /api/jobs; open its dashboard")
        return coordinator


_JOB_LIST_FIELDS = ("jobId", "name", "status", "submissionTime", "startTime", "completionTime", "restarts",
                    "processingGuarantee", "snapshotCount")
