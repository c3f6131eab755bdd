"""Stand-ins for what the tests have no real version of: member 0's /job endpoint, and the
StatefulSet controller and kubelet that turn a StatefulSet into pods with a status.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import kmock

from tests.operator.emulator import Emulator

JETJOBS = "jet.dev/v1alpha1/jetjobs"
PODS = "v1/pods"
STATEFULSETS = "apps/v1/statefulsets"


class FakeJobEndpoint:
    """Serves ``GET /<namespace>/<name>`` with the report a test sets for that job."""

    def __init__(self) -> None:
        self.reports: dict[str, dict[str, Any]] = {}
        reports = self.reports

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                report = reports.get(self.path.strip("/"))
                body = json.dumps(report).encode() if report is not None else b"{}"
                self.send_response(200 if report is not None else 503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url_template(self) -> str:
        """The operator's JET_OPERATOR_JOB_URL_TEMPLATE pointing here."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/{{namespace}}/{{name}}"

    def report(self, job: str, status: str, message: str = "", namespace: str = "default", **fields: Any) -> None:
        """Make member 0 of ``job`` report ``status`` (and any other ``/job`` ``fields``)."""
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.reports[f"{namespace}/{job}"] = {
            "jobId": "0a1b2c3d", "status": status, "message": message, "startTime": now,
            "completionTime": now if status in ("COMPLETED", "FAILED") else None, **fields,
        }

    def __enter__(self) -> "FakeJobEndpoint":
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def get(k8s: Emulator, resource: str, name: str, namespace: str | None = "default") -> dict[str, Any] | None:
    """The current object, or None if it does not exist (or was deleted)."""
    try:
        obj = k8s.objects[resource, namespace, name]
    except KeyError:
        return None
    return None if obj.deleted else obj.raw


def names(k8s: Emulator, resource: str, namespace: str = "default") -> set[str]:
    """Names of the live objects of a resource."""
    wanted = kmock.resource(resource)
    return {
        name for (res, ns, name), obj in k8s.objects.items()
        if res == wanted and ns == namespace and not obj.deleted
    }


async def eventually(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Poll ``check`` until it returns something truthy (without blocking the emulator's loop)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        await asyncio.sleep(0.05)


def run_statefulset(k8s: Emulator, name: str, namespace: str = "default") -> list[str]:
    """The StatefulSet controller: make pods ``<name>-<i>`` for i < replicas, drop the rest."""
    sts = get(k8s, STATEFULSETS, name, namespace)
    replicas = sts["spec"]["replicas"] if sts else 0
    template = sts["spec"]["template"] if sts else {}
    wanted = [f"{name}-{i}" for i in range(replicas)]
    for pod_name in names(k8s, PODS, namespace):
        if pod_name.startswith(f"{name}-") and pod_name not in wanted:
            k8s.objects[PODS, namespace, pod_name].delete()
    for pod_name in wanted:
        if get(k8s, PODS, pod_name, namespace) is None:
            k8s.objects[PODS, namespace, pod_name] = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    **template["metadata"], "name": pod_name, "namespace": namespace,
                    # As the real controller does: the pod's own name as a label (Services select by it).
                    "labels": {**template["metadata"].get("labels", {}),
                               "statefulset.kubernetes.io/pod-name": pod_name},
                    "uid": str(uuid.uuid4()),
                    "creationTimestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name,
                                         "uid": sts["metadata"].get("uid"), "controller": True}],
                },
                "spec": template["spec"],
                "status": {"phase": "Pending"},
            }
    return wanted


def set_pod_status(k8s: Emulator, name: str, *, scheduled: bool = True, ready: bool = False,
                   phase: str | None = None, waiting: str | None = None,
                   namespace: str = "default") -> None:
    """The kubelet: give a pod the status it would have."""
    phase = phase or ("Running" if ready else "Pending")
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [
            {"type": "PodScheduled", "status": "True" if scheduled else "False"},
            {"type": "Ready", "status": "True" if ready else "False"},
        ],
    }
    if waiting:
        status["containerStatuses"] = [{"name": "member", "ready": False,
                                        "state": {"waiting": {"reason": waiting, "message": "boom"}}}]
    pod = k8s.objects[PODS, namespace, name]
    pod.patch({"status": None})
    pod.patch({"status": status})


def set_driver_exit(k8s: Emulator, name: str, exit_code: int, log_tail: str = "",
                    namespace: str = "default") -> None:
    """The kubelet: a Spark driver pod (restartPolicy Never) whose container exited with
    ``exit_code``; a failed one's termination message is ``log_tail`` (FallbackToLogsOnError)."""
    terminated: dict[str, Any] = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
    if exit_code and log_tail:
        terminated["message"] = log_tail
    pod = k8s.objects[PODS, namespace, name]
    pod.patch({"status": None})
    pod.patch({"status": {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}],
        "containerStatuses": [{"name": "driver", "ready": False, "state": {"terminated": terminated}}],
    }})
