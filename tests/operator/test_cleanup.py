"""Deleting a JetJob never hangs: cleanup tolerates a terminating namespace and is bounded."""

from __future__ import annotations

import time

from jet_operator.builders import JobRef
from jet_operator.config import OperatorConfig
from jet_operator.kube import KubeError
from jet_operator.reconcile import CLEANUP_TOLERATED_STATUSES, cleanup

JOB = JobRef(name="wc", namespace="dying", uid="u1")


class TerminatingNamespaceApi:
    """Answers deletions as the API server does while a namespace is being deleted."""

    def __init__(self, statuses: list[int | Exception], delay_seconds: float = 0.0) -> None:
        self.statuses = statuses
        self.delay_seconds = delay_seconds
        self.deleted: list[tuple[str, str]] = []

    def delete(self, kind: str, namespace: str, name: str, tolerate=(404,)) -> bool:
        time.sleep(self.delay_seconds)
        self.deleted.append((kind, name))
        outcome = self.statuses[(len(self.deleted) - 1) % len(self.statuses)]
        if isinstance(outcome, Exception):
            raise outcome
        if outcome >= 400:
            if outcome in tolerate:
                return False
            raise KubeError(outcome, "refused")
        return True


def test_forbidden_gone_and_conflict_are_tolerated() -> None:
    assert set(CLEANUP_TOLERATED_STATUSES) == {403, 404, 409}
    api = TerminatingNamespaceApi([403, 404, 409, 200])
    assert cleanup(api, OperatorConfig(), JOB) == []
    kinds = {kind for kind, _ in api.deleted}
    assert {"StatefulSet", "Service", "ConfigMap", "Secret", "Pod", "Role"} <= kinds


def test_other_errors_are_reported_not_raised() -> None:
    api = TerminatingNamespaceApi([500, ConnectionError("api server gone")])
    left = cleanup(api, OperatorConfig(), JOB)
    assert len(left) == len(api.deleted) > 0
    assert any("api server gone" in reason for reason in left)


def test_cleanup_stops_at_its_timeout() -> None:
    api = TerminatingNamespaceApi([200], delay_seconds=0.05)
    started = time.monotonic()
    left = cleanup(api, OperatorConfig(cleanup_timeout_seconds=0.1), JOB)
    assert time.monotonic() - started < 1.0
    assert left and all("cleanup timeout" in reason for reason in left)
