"""The member's HTTP endpoint (standard library ``http.server`` on a daemon thread).

- ``GET /healthz``: 200 ``ok`` once the member's gRPC server is up (readiness and liveness probes),
  503 before; open to anyone who reaches the port;
- ``GET /job`` (member 0, the coordinator): the most recent job as JSON ``{"jobId", "name",
  "status", "message", "startTime", "completionTime", "processingGuarantee", "restarts",
  "lastRestartCause", "lastSnapshot" ({id, time, bytes, keys, durationMs} or null),
  "snapshotCount"}`` (a failed job's message holds the user's traceback, a suspended one's its cause);
  only with ``Authorization: Bearer <cluster token>`` (or ``Bearer`` the read-only
  :func:`~jet.cluster.links.auth.job_status_credential` of the token, which the operator sends), 401 without; 404 on the other members;
- ``GET /metrics``: Prometheus text (jobs submitted/completed/failed, executions per member, and
  per vertex and processor of the running executions Jet's ``receivedCount``, ``emittedCount``,
  ``topObservedWm``, ``coalescedWm``, ``lastForwardedWm``, ``lastForwardedWmLatency`` and
  ``lateEventsDropped``: :mod:`jet.cluster.executions.vertex_collector`), and on member 0 per job its restarts
  and snapshots (:class:`JobMetricsCollector`), open for scraping (figures only);
- the web dashboard: ``/`` and ``/ui/...`` (pages), ``/login?token=`` (a session cookie) and the
  JSON API under ``/api/`` (:mod:`jet.dashboard`), all behind the cluster token.

The server binds the member's own host (see ``MemberSettings.bind_host``).
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from jet.cluster.executions.vertex_collector import VertexMetricsCollector
from jet.cluster.links.auth import job_status_credential
from jet.dashboard.api import DashboardApi
from jet.dashboard.routes import FULL, MAX_BODY_BYTES, READ_ONLY, DashboardRoutes, Reply, json_reply

log = logging.getLogger("jet.cluster.http")

JOB_FIELDS = ("jobId", "name", "status", "message", "startTime", "completionTime", "processingGuarantee",
              "restarts", "lastRestartCause", "lastSnapshot", "snapshotCount")
BEARER_PREFIX = "Bearer "
_ANY_ADDRESS = ("[::]", "::", "0.0.0.0", "")
NO_JOB = {"jobId": None, "name": None, "status": "NOT_RUNNING", "message": "", "startTime": None,
          "completionTime": None, "processingGuarantee": "NONE", "restarts": 0, "lastRestartCause": "",
          "lastSnapshot": None, "snapshotCount": 0}


_TOKEN_IN_QUERY = re.compile(r"([?&]token=)[^&\s\"]*")

#: How often the HTTP server's loop looks for a shutdown request (seconds): rarely, since
#: :meth:`MemberHttpServer.stop` wakes it with a connection of its own (at 0.05 s its wake-ups
#: were 0.004 CPU s/s of an idle member).
SHUTDOWN_POLL_S = 2.0

class MemberMetrics:
    """The Prometheus metrics of one member, in a registry of its own."""

    def __init__(self, member_index: int) -> None:
        self.registry = CollectorRegistry()
        labels = {"member": str(member_index)}
        self.jobs_submitted = Counter("jet_jobs_submitted", "Jobs submitted to this coordinator",
                                      registry=self.registry)
        self.jobs_completed = Counter("jet_jobs_completed", "Jobs that ended COMPLETED", registry=self.registry)
        self.jobs_failed = Counter("jet_jobs_failed", "Jobs that ended FAILED", registry=self.registry)
        self.executions = Counter("jet_executions", "Job executions on this member, by outcome",
                                  ["outcome"], registry=self.registry)
        self.running = Gauge("jet_executions_running", "Executions running on this member",
                             registry=self.registry)
        self.info = Gauge("jet_member_info", "This member (value 1)", list(labels), registry=self.registry)
        self.info.labels(**labels).set(1)

    def watch_executions(self, executions: Callable[[], Iterable[Any]]) -> None:
        """Export the per-vertex figures of the executions ``executions()`` returns at each scrape."""
        self.registry.register(VertexMetricsCollector(executions))

    def watch_jobs(self, records: Callable[[], Iterable[Any]]) -> None:
        """Export each job's restarts and last snapshot (the coordinator's ``records()``) at each scrape."""
        self.registry.register(JobMetricsCollector(records))

    def text(self) -> bytes:
        return generate_latest(self.registry)


class JobMetricsCollector:
    """``jet_job_restarts_total``, ``jet_snapshots_total``, ``jet_snapshot_failures_total``,
    ``jet_snapshot_duration_seconds`` and ``jet_snapshot_bytes`` (of the last snapshot) per job,
    labelled ``job`` and ``job_name``, read from the coordinator's records at each scrape."""

    def __init__(self, records: Callable[[], Iterable[Any]]) -> None:
        self._records = records

    def describe(self) -> list:
        return []  # figures appear with the jobs; nothing to check at registration

    def collect(self):
        labels = ["job", "job_name"]
        restarts = CounterMetricFamily("jet_job_restarts", "Restarts of the job (lost members, restart())", labels=labels)
        taken = CounterMetricFamily("jet_snapshots", "Snapshots of the job committed", labels=labels)
        failed = CounterMetricFamily("jet_snapshot_failures", "Snapshots of the job that failed", labels=labels)
        duration = GaugeMetricFamily("jet_snapshot_duration_seconds", "Duration of the job's last snapshot",
                                     labels=labels)
        size = GaugeMetricFamily("jet_snapshot_bytes", "Size of the job's last snapshot", labels=labels)
        for record in self._records():
            values = [record.job_id, record.name]
            restarts.add_metric(values, record.restarts)
            taken.add_metric(values, record.snapshots.count)
            failed.add_metric(values, record.snapshots.failures)
            if record.snapshots.last_id >= 0:
                duration.add_metric(values, record.snapshots.last_duration_ms / 1000)
                size.add_metric(values, record.snapshots.last_bytes)
        yield from (restarts, taken, failed, duration, size)


HTTP_CONNECTIONS = 32
"""Connections served at once, each on a thread; more are closed at once (a flood of idle
connections cannot take every thread of a member)."""
HTTP_READ_TIMEOUT_S = 10.0
"""How long a connection may stay silent while its request is read."""


class _BoundedHttpServer(ThreadingHTTPServer):
    """A thread per connection, at most :data:`HTTP_CONNECTIONS` at once."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._slots = threading.BoundedSemaphore(HTTP_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug("http: refused a connection from %s: %d are served already", client_address[0],
                      HTTP_CONNECTIONS)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _IPv6HttpServer(_BoundedHttpServer):
    address_family = socket.AF_INET6


def _http_server(host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """An HTTP server on the gRPC server's ``host`` (every IPv4 interface for an any-address)."""
    if host in _ANY_ADDRESS:
        return _BoundedHttpServer(("0.0.0.0", port), handler)
    address = host.strip("[]")
    return (_IPv6HttpServer if ":" in address else _BoundedHttpServer)((address, port), handler)


class MemberHttpServer:
    """Serves ``/healthz``, ``/job`` (to holders of the cluster ``token``), ``/metrics`` and the
    dashboard (with ``dashboard``, its API)."""

    def __init__(self, host: str, port: int, *, token: str, healthy: Callable[[], bool],
                 latest_job: Callable[[], dict[str, Any] | None] | None, metrics: MemberMetrics,
                 dashboard: DashboardApi | None = None) -> None:
        self._healthy = healthy
        self._latest_job = latest_job
        self._metrics = metrics
        self._accepted_authorizations = tuple((BEARER_PREFIX + credential).encode("utf-8")
                                              for credential in (token, job_status_credential(token)))
        self._dashboard = DashboardRoutes(dashboard, token, self.bearer_access)
        handler = self._handler_class()
        self._server = _http_server(host, port, handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(SHUTDOWN_POLL_S,),
                                        name="jet-http", daemon=True)

    def start(self) -> "MemberHttpServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, at once: a connection of our own wakes the serving loop, which would
        otherwise see the shutdown only at its next poll (most of a member's stop)."""
        if self._thread.is_alive():
            stopping = threading.Thread(target=self._server.shutdown, name="jet-http-stop", daemon=True)
            stopping.start()
            while stopping.is_alive():
                self._wake_serving_loop()
                stopping.join(0.005)
        self._server.server_close()

    def _wake_serving_loop(self) -> None:
        host = self._server.server_address[0]
        if host in ("0.0.0.0", "::", ""):  # bound to every address: the loopback one of its family
            host = "::1" if host == "::" else "127.0.0.1"
        try:
            socket.create_connection((host, self.port), timeout=0.1).close()
        except OSError:
            pass  # the loop still sees the shutdown at its next poll

    def authorized(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header value carries the cluster token or its job-status
        credential."""
        return self.bearer_access(authorization) is not None

    def bearer_access(self, authorization: str | None) -> str | None:
        """``FULL`` for the cluster token, ``READ_ONLY`` for its job-status credential, else None."""
        if authorization is None:
            return None
        presented = authorization.strip().encode("utf-8")
        # Both compared every time, so the answer's timing does not tell which one was close.
        matches = [hmac.compare_digest(presented, accepted) for accepted in self._accepted_authorizations]
        return FULL if matches[0] else READ_ONLY if matches[1] else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            timeout = HTTP_READ_TIMEOUT_S  # a silent connection does not hold its thread forever

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path, _, query = self.path.partition("?")
                if path == "/healthz":
                    ok = outer._healthy()
                    self._reply(200 if ok else 503, b"ok\n" if ok else b"starting\n", "text/plain")
                elif path == "/job":
                    if not outer.authorized(self.headers.get("Authorization")):
                        log.warning("http: refused /job to %s: no or wrong bearer token", self.client_address[0])
                        self._json(401, {"error": "/job needs the header 'Authorization: Bearer <cluster token>'"},
                                   {"WWW-Authenticate": 'Bearer realm="jet"'})
                    elif outer._latest_job is None:
                        self._json(404, {"error": "only member 0 (the coordinator) serves /job"})
                    else:
                        job = outer._latest_job()
                        self._json(200, NO_JOB if job is None else {k: job.get(k) for k in JOB_FIELDS})
                elif path == "/metrics":
                    self._reply(200, outer._metrics.text(), CONTENT_TYPE_LATEST)
                elif outer._dashboard.handles(path):
                    self._send(outer._dashboard.get(path, query, self.headers))
                else:
                    self._json(404, {"error": f"no such path {path!r}; try /, /api/jobs, /healthz, /job or /metrics"})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.partition("?")[0]
                declared = self.headers.get("Content-Length") or "0"
                length = int(declared) if declared.isdigit() else -1
                if not 0 <= length <= MAX_BODY_BYTES:
                    self._send(json_reply(413 if length > 0 else 400, {
                        "error": f"a request body needs a Content-Length of 0 to {MAX_BODY_BYTES} bytes, got {declared!r}"}))
                    return
                body = self.rfile.read(length) if length > 0 else b""
                self._send(outer._dashboard.post(path, self.headers, body))

            def _send(self, reply: Reply) -> None:
                self._reply(reply.code, reply.body, reply.content_type, reply.headers)

            def _json(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._reply(code, json.dumps(body).encode("utf-8"), "application/json", headers)

            def _reply(self, code: int, body: bytes, content_type: str,
                       headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                if log.isEnabledFor(logging.DEBUG):  # the request line of /login holds the token
                    log.debug("http: %s", _TOKEN_IN_QUERY.sub(r"\1<token>", format % args))

        return Handler
