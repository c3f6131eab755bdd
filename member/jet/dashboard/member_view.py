"""All the dashboard reads of the cluster: the narrow view of a member (and of its coordinator,
on member 0) that :class:`~jet.cluster.member.Member` offers. The dashboard imports nothing of
the member process; the member hands itself over as this view."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence


class CoordinatorView(Protocol):
    """Member 0's coordinator, as the dashboard reads and steers its jobs."""

    member_count: int

    def job_headers(self) -> list[dict[str, Any]]: ...

    def record(self, job_id: str) -> Any: ...

    def dag(self, job_id: str) -> Any: ...

    def metrics(self, job_id: str) -> dict[str, dict[str, int]]: ...

    def suspend(self, job_id: str) -> Any: ...

    def resume(self, job_id: str) -> Any: ...

    def restart(self, job_id: str) -> Any: ...

    def cancel(self, job_id: str) -> Any: ...

    def export_snapshot(self, job_id: str, name: str, cancel: bool = False) -> dict[str, Any]: ...


class MembershipView(Protocol):
    def joined_peers(self) -> list[int]: ...


class PeerCall(Protocol):
    """A peer's control connection: ``control(message type, payload, timeout_s, wait_for_ready)``."""

    def control(self, msg_type: str, payload: bytes, timeout_s: float, wait_for_ready: bool = ...) -> bytes: ...


class MemberView(Protocol):
    """One member: who it is, its peers and their connections, its executions and threads, and
    its coordinator (None but on member 0)."""

    index: int
    member_count: int
    addresses: Sequence[Any]
    threads: int
    executions: Mapping[int, Any]
    connections: Mapping[int, PeerCall]
    membership: MembershipView
    coordinator: CoordinatorView | None
