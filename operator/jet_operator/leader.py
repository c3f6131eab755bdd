"""Leader election over a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does,
so the operator can run with more than one replica: one leads, the others wait.

The operator waits in its startup (before Kopf watches anything) until it holds the Lease,
then renews it every ``retry`` seconds in a task of its event loop. A replica that has not renewed
for ``renew deadline`` seconds has lost the lead: it stops (SIGTERM to itself: Kopf shuts
down, Kubernetes restarts the pod, which then waits like any other replica). An operator that
stops releases the Lease, so a waiting replica takes over at once; one that dies leaves it to
expire after ``lease seconds``. Every write carries the Lease's ``resourceVersion`` as a JSON
patch ``test``: of two replicas writing at once, one fails (422) and waits.

Kopf's own peering pauses operators of lower priority, but two of the same priority pause each
other, and it is no election; so the chart runs Kopf ``--standalone`` behind this Lease.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

from jet_operator.config import OperatorConfig
from jet_operator.kube import KubeApi, KubeError, load_client_configuration
from jet_operator.lifecycle import parse_time

logger = logging.getLogger(__name__)

LEASE_KIND = "Lease"
# Conflicting writers: another replica changed the Lease (JSON patch test) or made it first.
CONFLICT_STATUSES = (409, 422)


def micro_time(value: datetime.datetime) -> str:
    """A Lease's MicroTime (RFC 3339 with microseconds, ``Z``)."""
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """This replica's name in the Lease: its pod name, else host name and a random suffix."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class LeaseState:
    """What a Lease says (``spec``)."""

    holder: str
    renewed: datetime.datetime | None
    duration_seconds: float
    transitions: int

    @classmethod
    def of(cls, lease: Mapping[str, Any]) -> "LeaseState":
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            renewed=parse_time(spec.get("renewTime")),
            duration_seconds=float(spec.get("leaseDurationSeconds") or 0),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def expired(self, now: datetime.datetime) -> bool:
        """Whether its holder has not renewed it in time (or nobody holds it)."""
        if not self.holder or self.renewed is None:
            return True
        return now > self.renewed + datetime.timedelta(seconds=self.duration_seconds)


def may_hold(lease: Mapping[str, Any] | None, identity: str, now: datetime.datetime) -> bool:
    """Whether ``identity`` may write itself into ``lease`` as its holder now (pure)."""
    if lease is None:
        return True
    state = LeaseState.of(lease)
    return state.holder == identity or state.expired(now)


def lease_spec(lease: Mapping[str, Any] | None, identity: str, now: datetime.datetime,
               duration_seconds: float) -> dict[str, Any]:
    """The Lease's ``spec`` with ``identity`` holding it from ``now`` (pure)."""
    state = LeaseState.of(lease) if lease is not None else None
    taking_over = state is None or state.holder != identity
    spec = dict((lease or {}).get("spec") or {})
    spec.update({
        "holderIdentity": identity,
        "leaseDurationSeconds": int(duration_seconds),
        "renewTime": micro_time(now),
    })
    if taking_over:
        spec["acquireTime"] = micro_time(now)
        spec["leaseTransitions"] = (state.transitions + 1) if state is not None and state.holder else (
            state.transitions if state is not None else 0)
    return spec


class LeaderElector:
    """Holds the Lease ``namespace/name`` for ``identity``."""

    def __init__(self, api: KubeApi, namespace: str, name: str, identity: str, *,
                 lease_seconds: float = 15.0, renew_deadline_seconds: float = 10.0, retry_seconds: float = 2.0,
                 clock: Callable[[], datetime.datetime] | None = None) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.renew_deadline_seconds = renew_deadline_seconds
        self.retry_seconds = retry_seconds
        self._clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))

    def try_hold(self) -> bool:
        """One attempt to take or renew the Lease; True if this replica holds it now."""
        now = self._clock()
        try:
            lease = self.api.get(LEASE_KIND, self.namespace, self.name)
            if not may_hold(lease, self.identity, now):
                return False
            spec = lease_spec(lease, self.identity, now, self.lease_seconds)
            if lease is None:
                self.api.create({"apiVersion": "coordination.k8s.io/v1", "kind": LEASE_KIND,
                                 "metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec})
            else:
                self.api.json_patch(LEASE_KIND, self.namespace, self.name, [
                    {"op": "test", "path": "/metadata/resourceVersion",
                     "value": lease["metadata"]["resourceVersion"]},
                    {"op": "replace", "path": "/spec", "value": spec},
                ])
        except KubeError as error:
            if error.status not in CONFLICT_STATUSES:
                logger.warning("Lease %s/%s: %s", self.namespace, self.name, error)
            return False
        except Exception as error:  # noqa: BLE001 - the API unreachable: try again later
            logger.warning("Lease %s/%s: %s", self.namespace, self.name, error)
            return False
        return True

    def holder(self) -> str:
        """Who holds the Lease now ("" for nobody)."""
        lease = self.api.get(LEASE_KIND, self.namespace, self.name)
        return LeaseState.of(lease).holder if lease is not None else ""

    async def renew(self, on_lost: Callable[[], None]) -> None:
        """Renew the Lease every ``retry`` seconds (an asyncio task of the operator's loop, so
        it ends with the operator); ``on_lost`` when no renewal has succeeded for the renew
        deadline."""
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_seconds)
            if await asyncio.to_thread(self.try_hold):
                last = time.monotonic()
            elif time.monotonic() - last > self.renew_deadline_seconds:
                logger.error("Lost the lead (Lease %s/%s not renewed for %.0fs); stopping",
                             self.namespace, self.name, time.monotonic() - last)
                on_lost()
                return

    def release(self) -> None:
        """Give the Lease up if this replica holds it (a waiting replica takes over at once);
        stop :meth:`renew` first."""
        try:
            lease = self.api.get(LEASE_KIND, self.namespace, self.name)
            if lease is not None and LeaseState.of(lease).holder == self.identity:
                self.api.json_patch(LEASE_KIND, self.namespace, self.name, [
                    {"op": "test", "path": "/metadata/resourceVersion",
                     "value": lease["metadata"]["resourceVersion"]},
                    {"op": "replace", "path": "/spec/holderIdentity", "value": ""},
                ])
        except Exception as error:  # noqa: BLE001 - it expires anyway
            logger.warning("Lease %s/%s not released: %s", self.namespace, self.name, error)


class WaitingHealth:
    """``GET /healthz`` answering 200 on ``port`` while this replica waits for the lead: Kopf
    serves its liveness endpoint only once its startup is done, and a waiting replica must not
    be killed by its liveness probe. Closed before Kopf binds the port."""

    def __init__(self, port: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                self.send_response_only(200)  # alive; the body does not matter to a probe
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="waiting-health", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def elector_of(config: OperatorConfig) -> LeaderElector:
    """The elector ``config`` describes, for this replica (its Lease in ``namespace``, else the
    pod's, ``$POD_NAMESPACE``, else ``default``)."""
    namespace = config.leader_election_namespace or os.environ.get("POD_NAMESPACE") or "default"
    # A Lease call slower than two retry periods is as good as failed (and a stopping operator
    # that cannot reach the API gives up its Lease quickly).
    api = KubeApi(load_client_configuration(),
                  min(config.api_timeout_seconds, 2 * config.leader_election_retry_seconds))
    return LeaderElector(api, namespace, config.leader_election_lease_name, default_identity(),
                         lease_seconds=config.leader_election_lease_seconds,
                         renew_deadline_seconds=config.leader_election_renew_deadline_seconds,
                         retry_seconds=config.leader_election_retry_seconds)


async def wait_for_the_lead(elector: LeaderElector, health_port: int, log: logging.Logger) -> None:
    """Return once ``elector`` holds its Lease; meanwhile answer the liveness probe on
    ``health_port`` (0: no)."""
    health: WaitingHealth | None = None
    try:
        first = True
        while not await asyncio.to_thread(elector.try_hold):
            if first:
                holder = await asyncio.to_thread(elector.holder)
                log.info("Waiting for the lead: Lease %s/%s is held by %s", elector.namespace, elector.name, holder)
                health = WaitingHealth(health_port) if health_port else None
                first = False
            await asyncio.sleep(elector.retry_seconds)
    finally:
        if health is not None:
            health.close()
    log.info("Leading as %s (Lease %s/%s)", elector.identity, elector.namespace, elector.name)


def stop_this_process() -> None:
    """What a replica does when it loses the lead: stop as on SIGTERM (Kopf shuts down)."""
    os.kill(os.getpid(), signal.SIGTERM)
