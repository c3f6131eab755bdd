"""The operator under Kopf against the API emulator: a JetJob's whole life.

The test plays the parts no emulator has: the StatefulSet controller and kubelet (pods and
their statuses, see ``fakes``) and member 0's /job endpoint (``job_endpoint``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kopf.testing import KopfRunner

from tests.operator.emulator import Emulator
from tests.operator.fakes import (
    JETJOBS,
    PODS,
    STATEFULSETS,
    FakeJobEndpoint,
    eventually,
    get,
    names,
    run_statefulset,
    set_pod_status,
)

COLLECTION = "/apis/jet.dev/v1alpha1/namespaces/default/jetjobs"
WORDCOUNT = {
    "apiVersion": "jet.dev/v1alpha1",
    "kind": "JetJob",
    "metadata": {"name": "wc", "namespace": "default"},
    "spec": {
        "image": "jet:test",
        "pipeline": {"code": "def pipeline():\n    ...\n"},
        "members": {"replicas": 2},
    },
}


def jetjob(name: str = "wc", **spec: Any) -> dict[str, Any]:
    """The word-count JetJob, renamed, with spec fields replaced."""
    document = copy.deepcopy(WORDCOUNT)
    document["metadata"]["name"] = name
    document["spec"].update(spec)
    return document


@contextmanager
def operator() -> Iterator[KopfRunner]:
    """The operator, as the chart runs it, for one namespace."""
    args = ["run", "--standalone", "--verbose", "-n", "default", "-m", "jet_operator.main"]
    with KopfRunner(args, timeout=30) as runner:
        yield runner
    assert runner.exception is None, runner.output
    assert "[ERROR" not in runner.output, runner.output


def phase(k8s: Emulator, name: str = "wc") -> str | None:
    job = get(k8s, JETJOBS, name)
    return (job or {}).get("status", {}).get("phase")


def status(k8s: Emulator, name: str = "wc") -> dict[str, Any]:
    return (get(k8s, JETJOBS, name) or {}).get("status", {})


def event_reasons(k8s: Emulator, name: str = "wc") -> list[tuple[str, str, str]]:
    """(type, reason, message) of the events posted about a JetJob, oldest first."""
    events = []
    for key in names(k8s, "v1/events"):
        event = get(k8s, "v1/events", key)
        if event and event.get("involvedObject", {}).get("name") == name:
            events.append((event.get("type"), event.get("reason"), event.get("message")))
    return events


async def wait_phase(k8s: Emulator, expected: str, name: str = "wc", timeout: float = 20) -> dict[str, Any]:
    await eventually(lambda: phase(k8s, name) == expected, timeout,
                     what=f"phase {expected} (now {phase(k8s, name)}: {status(k8s, name).get('message')})")
    return status(k8s, name)


async def test_job_runs_to_completion_and_is_cleaned_up(k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    with operator():
        response = await k8s.post(COLLECTION, json=jetjob())
        assert response.status in (200, 201), await response.text()
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member"), what="the StatefulSet")
        owner = get(k8s, JETJOBS, "wc")
        assert owner["metadata"]["finalizers"] == ["jet.dev/finalizer"]
        children = {
            "apps/v1/statefulsets": "wc-member", "v1/services": "wc-member",
            "v1/secrets": "wc-token", "v1/configmaps": "wc-config",
        }
        for resource, name in {**children, "v1/configmaps ": "wc-pipeline"}.items():
            child = get(k8s, resource.strip(), name)
            assert child is not None, (resource, name)
            (reference,) = child["metadata"]["ownerReferences"]
            assert reference["uid"] == owner["metadata"]["uid"] and reference["controller"] is True
        sts = get(k8s, STATEFULSETS, "wc-member")
        assert sts["spec"]["replicas"] == 2
        pending = await wait_phase(k8s, "Pending")
        assert pending["observedGeneration"] == owner["metadata"]["generation"]
        assert pending["selector"] == "jet.dev/component=member,jet.dev/jetjob-name=wc"

        pods = run_statefulset(k8s, "wc-member")
        for pod in pods:
            set_pod_status(k8s, pod, scheduled=True, ready=False)
        starting = await wait_phase(k8s, "Starting")
        assert starting["membersReady"] == "0/2"
        for pod in pods:
            set_pod_status(k8s, pod, ready=True)
        await eventually(lambda: status(k8s)["membersReady"] == "2/2", what="2/2 ready")
        assert phase(k8s) == "Starting"  # members up, the coordinator has not reported yet

        job_endpoint.report("wc", "RUNNING")
        running = await wait_phase(k8s, "Running")
        assert running["jobId"] == "0a1b2c3d"
        assert {c["type"]: c["status"] for c in running["conditions"]} == {
            "Ready": "True", "Progressing": "False", "Degraded": "False"}

        job_endpoint.report("wc", "COMPLETED")
        completed = await wait_phase(k8s, "Completed")
        assert completed["completionTime"]
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0,
                         what="members scaled to 0")
        reasons = [reason for _, reason, _ in event_reasons(k8s)]
        for expected in ("Pending", "Starting", "Running", "Completed"):
            assert expected in reasons, reasons

        response = await k8s.delete(f"{COLLECTION}/wc")
        assert response.status == 200
        await eventually(lambda: get(k8s, JETJOBS, "wc") is None, what="the JetJob gone")
        for resource, name in children.items():
            assert get(k8s, resource, name) is None, (resource, name)
        assert get(k8s, "v1/configmaps", "wc-pipeline") is None
