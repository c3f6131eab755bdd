"""The operator under Kopf against the API emulator: a JetJob's whole life.

The test plays the parts no emulator has: the StatefulSet controller and kubelet (pods and
their statuses, see ``fakes``) and member 0's /job endpoint (``job_endpoint``).
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kopf.testing import KopfRunner

from jet_operator.lifecycle import parse_time

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
    set_driver_exit,
    set_pod_status,
)

COLLECTION = "/apis/jet.dev/v1alpha1/namespaces/default/jetjobs"
SECRETS = "v1/secrets"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
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


#: Kopf's own retry of an API request whose keep-alive connection the emulator closed: it logs
#: the failed attempt at ERROR and retries (up to 9 times); a request that fails for good ends
#: in a handler error or a failed test instead.
_KOPF_TRANSPORT_RETRY = re.compile(r"Request attempt #\d+/\d+ failed; (will retry|TCP closed)")


@contextmanager
def operator() -> Iterator[KopfRunner]:
    """The operator, as the chart runs it, for one namespace."""
    args = ["run", "--standalone", "--verbose", "-n", "default", "-m", "jet_operator.main"]
    with KopfRunner(args, timeout=30) as runner:
        yield runner
    assert runner.exception is None, runner.output
    errors = [line for line in runner.output.splitlines()
              if "[ERROR" in line and not _KOPF_TRANSPORT_RETRY.search(line)]
    assert errors == [], runner.output


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
            events.append((event.get("firstTimestamp") or "", event.get("type"), event.get("reason"),
                           event.get("message")))
    return [event[1:] for event in sorted(events, key=lambda event: event[0])]


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

        job_endpoint.report("wc", "COMPLETED", restarts=1, snapshotCount=0)
        completed = await wait_phase(k8s, "Completed")
        assert completed["completionTime"]
        # The members stay for spec.ttlSecondsAfterFinished (default 300 s): kubectl logs finds them.
        until = parse_time(completed["membersUntil"]) - parse_time(completed["completionTime"])
        assert 299 <= until.total_seconds() <= 302, completed
        result = completed["result"]
        assert (result["status"], result["jobId"], result["restarts"], result["attempts"], result["message"]) == (
            "COMPLETED", "0a1b2c3d", 1, 0, ""), result
        assert result["completionTime"] == completed["completionTime"] and result["membersKeptSeconds"] == 300
        assert result["summary"].startswith("COMPLETED in ") and "(1 restart)" in result["summary"], result
        await asyncio.sleep(1)  # three status looks
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 2
        assert status(k8s)["phase"] == "Completed"
        # Kopf posts events after the status patch: they may arrive a moment later.
        await eventually(lambda: {"Pending", "Starting", "Running", "Completed"}
                         <= {reason for _, reason, _ in event_reasons(k8s)},
                         what="an event for every phase")

        response = await k8s.delete(f"{COLLECTION}/wc")
        assert response.status == 200
        await eventually(lambda: get(k8s, JETJOBS, "wc") is None, what="the JetJob gone")
        for resource, name in children.items():
            assert get(k8s, resource, name) is None, (resource, name)
        assert get(k8s, "v1/configmaps", "wc-pipeline") is None


async def delete_jetjob(k8s: Emulator, name: str) -> None:
    """Delete a JetJob and wait until it is gone (before the operator stops, a timer still in
    flight would wait for the emulator that the stopping test blocks)."""
    response = await k8s.delete(f"{COLLECTION}/{name}")
    assert response.status == 200, await response.text()
    await eventually(lambda: get(k8s, JETJOBS, name) is None, what=f"the JetJob {name} gone")


def secret_state(k8s: Emulator, name: str) -> tuple[str, dict[str, str]]:
    """A Secret's uid and data: what replacing it would change."""
    secret = get(k8s, SECRETS, name)
    assert secret is not None, f"Secret {name} missing"
    return secret["metadata"]["uid"], copy.deepcopy(secret["data"])


async def test_secrets_are_created_once_and_deleted_with_the_job(k8s: Emulator) -> None:
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await k8s.post(COLLECTION, json=jetjob("plain", tls={"enabled": False}))
        await wait_phase(k8s, "Pending")
        await wait_phase(k8s, "Pending", "plain")
        owner = get(k8s, JETJOBS, "wc")
        first = {}
        for name in ("wc-token", "wc-member-key", "wc-tls", "wc-ca"):
            first[name] = secret_state(k8s, name)
            (reference,) = get(k8s, SECRETS, name)["metadata"]["ownerReferences"]
            assert reference["uid"] == owner["metadata"]["uid"] and reference["controller"] is True
        assert first["wc-ca"][1] == {"ca.crt": first["wc-tls"][1]["ca.crt"]}
        assert first["wc-token"][1]["token"] != first["wc-member-key"][1]["member-key"]
        # TLS off: the token and the member key, no TLS Secrets.
        assert names(k8s, SECRETS) >= {"plain-token", "plain-member-key"}
        assert not names(k8s, SECRETS) & {"plain-tls", "plain-ca"}
        await delete_jetjob(k8s, "plain")

        # A spec change reconciles again: new StatefulSet, the same Secrets.
        await k8s.patch(f"{COLLECTION}/wc", json={"spec": {"members": {"replicas": 3}}}, headers=MERGE_PATCH)
        await eventually(lambda: status(k8s).get("observedGeneration") == 2, what="generation 2")
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 3
        for name, state in first.items():
            assert secret_state(k8s, name) == state, f"Secret {name} was replaced"

        # A TLS Secret deleted by hand is issued anew at the next reconcile; the CA follows it.
        k8s.objects[SECRETS, "default", "wc-tls"].delete()
        await k8s.patch(f"{COLLECTION}/wc", json={"spec": {"members": {"replicas": 2}}}, headers=MERGE_PATCH)
        await eventually(lambda: status(k8s).get("observedGeneration") == 3, what="generation 3")
        uid, tls = secret_state(k8s, "wc-tls")
        assert uid != first["wc-tls"][0] and tls["ca.crt"] != first["wc-tls"][1]["ca.crt"]
        assert secret_state(k8s, "wc-ca")[1] == {"ca.crt": tls["ca.crt"]}
        assert secret_state(k8s, "wc-member-key") == first["wc-member-key"]

        await delete_jetjob(k8s, "wc")
        assert not names(k8s, SECRETS) & set(first), names(k8s, SECRETS)


async def start_members(k8s: Emulator, name: str = "wc", ready: bool = True) -> list[str]:
    """Play the StatefulSet controller and kubelet for the job's members."""
    await eventually(lambda: get(k8s, STATEFULSETS, f"{name}-member"), what="the StatefulSet")
    await wait_phase(k8s, "Pending", name)
    pods = run_statefulset(k8s, f"{name}-member")
    for pod in pods:
        set_pod_status(k8s, pod, ready=ready)
    return pods


async def test_finished_members_go_when_the_ttl_runs_out(k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    with operator():
        await k8s.post(COLLECTION, json=jetjob(ttlSecondsAfterFinished=2))
        await start_members(k8s)
        job_endpoint.report("wc", "COMPLETED", snapshotCount=3,
                            lastSnapshot={"id": 2, "time": "2026-01-02T03:04:05Z", "bytes": 10, "keys": 1})
        completed = await wait_phase(k8s, "Completed")
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 2  # kept for the TTL
        assert completed["result"]["snapshotCount"] == 3
        assert completed["result"]["lastSnapshot"]["id"] == 2
        assert "3 snapshots" in completed["result"]["summary"]
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0, 10,
                         what="members scaled to 0 after the TTL")
        released = await eventually(lambda: (s := status(k8s)).get("membersUntil") is None and s,
                                    what="membersUntil cleared")
        assert released["phase"] == "Completed" and released["members"] == {"desired": 0, "ready": 0}
        assert released["result"] == completed["result"]  # the outcome outlives the pods
        await eventually(lambda: [m for _, r, m in event_reasons(k8s) if r == "MembersRemoved"],
                         what="a MembersRemoved event")
        assert [m for _, r, m in event_reasons(k8s) if r == "MembersRemoved"] == [
            "spec.ttlSecondsAfterFinished (2s) ran out: members scaled to 0 (status.result keeps the outcome)"]
        await delete_jetjob(k8s, "wc")


async def test_job_error_from_the_coordinator_fails_the_job(k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    error = "Traceback (most recent call last):\n  ...\nZeroDivisionError: division by zero"
    with operator():
        await k8s.post(COLLECTION, json=jetjob(ttlSecondsAfterFinished=0))
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING")
        await wait_phase(k8s, "Running")
        job_endpoint.report("wc", "FAILED", message=error)
        failed = await wait_phase(k8s, "Failed")
        assert "ZeroDivisionError: division by zero" in failed["message"]
        assert failed["message"].startswith("the job failed: Traceback")
        assert {c["type"]: c["status"] for c in failed["conditions"]}["Degraded"] == "True"
        assert "restartAt" not in failed  # restartPolicy Never
        assert failed["result"]["status"] == "FAILED" and failed.get("membersUntil") is None
        assert failed["result"]["message"] == "the job failed: ZeroDivisionError: division by zero"
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0,
                         what="members scaled to 0")
        await eventually(lambda: any(t == "Warning" and r == "Failed" and "ZeroDivisionError" in m
                                     for t, r, m in event_reasons(k8s)),
                         what="a Failed warning event")


async def test_missing_config_map_fails_with_an_event_naming_the_field(k8s: Emulator) -> None:
    document = jetjob("fromcm", pipeline={"configMapRef": {"name": "nowhere", "key": "job.py"}})
    with operator():
        await k8s.post(COLLECTION, json=document)
        failed = await wait_phase(k8s, "Failed", "fromcm")
        assert "spec.pipeline.configMapRef" in failed["message"] and "'nowhere'" in failed["message"]
        events = await eventually(lambda: [e for e in event_reasons(k8s, "fromcm") if e[0] == "Warning"],
                                  what="a warning event")
        assert any("spec.pipeline.configMapRef" in message for _, _, message in events), events
        assert get(k8s, STATEFULSETS, "fromcm-member") is None


async def test_a_name_the_children_cannot_carry_fails_naming_it(k8s: Emulator) -> None:
    """The CRD's CEL rule refuses it; an API server without CEL lets it through to the operator."""
    name = "wc.v2"
    with operator():
        await k8s.post(COLLECTION, json=jetjob(name))
        failed = await wait_phase(k8s, "Failed", name)
        assert failed["message"].startswith("metadata.name: JetJob name 'wc.v2' is not a DNS label"), failed
        assert get(k8s, STATEFULSETS, f"{name}-member") is None
        await delete_jetjob(k8s, name)


async def test_image_pull_failure_is_retried_then_fails(k8s: Emulator) -> None:
    document = jetjob("badimage", restartPolicy={"type": "OnFailure", "maxRetries": 1, "backoffSeconds": 0})
    with operator():
        await k8s.post(COLLECTION, json=document)
        first = await start_members(k8s, "badimage", ready=False)
        set_pod_status(k8s, first[1], waiting="ImagePullBackOff")
        restarted = await wait_phase(k8s, "Pending", "badimage")
        await eventually(lambda: status(k8s, "badimage").get("restartCount") == 1, what="restart 1")
        # Every pod of the failed attempt is deleted at once; the new ones carry attempt 1.
        await eventually(lambda: not names(k8s, PODS), what="old pods deleted")
        template = get(k8s, STATEFULSETS, "badimage-member")["spec"]["template"]
        assert template["metadata"]["annotations"]["jet.dev/attempt"] == "1"
        assert get(k8s, STATEFULSETS, "badimage-member")["spec"]["replicas"] == 2
        assert restarted["observedGeneration"] == 1

        second = run_statefulset(k8s, "badimage-member")
        set_pod_status(k8s, second[0], waiting="ErrImagePull")
        failed = await wait_phase(k8s, "Failed", "badimage")
        assert "ErrImagePull" in failed["message"] and "badimage-member-0" in failed["message"]
        assert failed["restartCount"] == 1
        assert "restartAt" not in failed


async def test_a_restart_recreates_missing_secrets(k8s: Emulator) -> None:
    document = jetjob("old", restartPolicy={"type": "OnFailure", "maxRetries": 1, "backoffSeconds": 0})
    with operator():
        await k8s.post(COLLECTION, json=document)
        pods = await start_members(k8s, "old", ready=False)
        # As if an operator from before the member key and TLS had started the job.
        for name in ("old-member-key", "old-tls", "old-ca"):
            k8s.objects[SECRETS, "default", name].delete()
        set_pod_status(k8s, pods[0], waiting="ImagePullBackOff")
        await eventually(lambda: status(k8s, "old").get("restartCount") == 1, what="restart 1")
        assert names(k8s, SECRETS) >= {"old-token", "old-member-key", "old-tls", "old-ca"}
        await delete_jetjob(k8s, "old")


async def test_spark_job_completes_when_its_drivers_have(k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    with operator():
        await k8s.post(COLLECTION, json=jetjob("sparky", spark={}, ttlSecondsAfterFinished=0))
        await start_members(k8s, "sparky")
        job_endpoint.report("sparky", "RUNNING", namespace="default")
        await eventually(lambda: get(k8s, PODS, "sparky-spark-sink"), what="the sink driver")
        set_driver_exit(k8s, "sparky-spark-source", 0)
        job_endpoint.report("sparky", "COMPLETED", namespace="default")
        completing = await wait_phase(k8s, "Completing", "sparky")
        assert completing["message"] == "the job completed; waiting for Spark driver(s) sparky-spark-sink"
        assert get(k8s, STATEFULSETS, "sparky-member")["spec"]["replicas"] == 2  # still being read

        set_driver_exit(k8s, "sparky-spark-sink", 0)
        completed = await wait_phase(k8s, "Completed", "sparky")
        assert completed["message"] == "the job completed"
        assert get(k8s, STATEFULSETS, "sparky-member")["spec"]["replicas"] == 0
        await delete_jetjob(k8s, "sparky")


async def test_suspend_resume_and_spec_change(k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    path = f"{COLLECTION}/wc"
    merge = MERGE_PATCH
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING")
        await wait_phase(k8s, "Running")

        await k8s.patch(path, json={"spec": {"suspend": True}}, headers=merge)
        suspended = await wait_phase(k8s, "Suspended")
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0
        assert suspended["observedGeneration"] == 2
        job_endpoint.reports.clear()

        await k8s.patch(path, json={"spec": {"suspend": False}}, headers=merge)
        await wait_phase(k8s, "Pending")
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 2

        await k8s.patch(path, json={"spec": {"members": {"replicas": 3}}}, headers=merge)
        await eventually(lambda: status(k8s).get("observedGeneration") == 4, what="generation 4")
        sts = get(k8s, STATEFULSETS, "wc-member")
        assert sts["spec"]["replicas"] == 3
        member = sts["spec"]["template"]["spec"]["containers"][0]
        assert member["args"][member["args"].index("--replicas") + 1] == "3"
        assert sts["spec"]["template"]["metadata"]["annotations"]["jet.dev/generation"] == "4"
        assert status(k8s)["members"]["desired"] == 3


async def test_spark_job_gets_drivers_of_the_running_job_and_their_rbac(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    document = jetjob("sparky", spark={"executor": {"instances": 3}})
    with operator():
        await k8s.post(COLLECTION, json=document)
        for resource in ("v1/serviceaccounts", "rbac.authorization.k8s.io/v1/roles",
                         "rbac.authorization.k8s.io/v1/rolebindings"):
            await eventually(lambda: get(k8s, resource, "sparky-spark"), what=resource)
        await start_members(k8s, "sparky")
        await wait_phase(k8s, "Starting", "sparky")
        assert not names(k8s, PODS) & {"sparky-spark-source", "sparky-spark-sink"}  # no job id yet

        job_endpoint.report("sparky", "RUNNING", namespace="default")
        await eventually(lambda: get(k8s, PODS, "sparky-spark-sink"), what="the sink driver")
        source = get(k8s, PODS, "sparky-spark-source")
        assert source["spec"]["serviceAccountName"] == "sparky-spark"
        args = source["spec"]["containers"][0]["args"]
        assert "spark.executor.instances=3" in args
        assert args[args.index("--job-id") + 1] == job_endpoint.reports["default/sparky"]["jobId"]
        await wait_phase(k8s, "Running", "sparky")
        await eventually(lambda: {job["name"] for job in status(k8s, "sparky").get("sparkJobs") or []}
                         == {"sparky-spark-source", "sparky-spark-sink"}, what="status.sparkJobs")

        # Member 0 submitted the job again (it restarted): the drivers follow the new id.
        job_endpoint.reports["default/sparky"]["jobId"] = "ffff-0000"
        await eventually(lambda: all(
            (pod := get(k8s, PODS, f"sparky-{component}"))
            and pod["metadata"]["annotations"]["jet.dev/job-id"] == "ffff-0000"
            and "ffff-0000" in pod["spec"]["containers"][0]["args"]
            for component in ("spark-source", "spark-sink")), what="drivers of the new job id")

        set_driver_exit(k8s, "sparky-spark-source", 1, "spark-source failed: [PATH_NOT_FOUND] no /in")
        failed = await wait_phase(k8s, "Failed", "sparky")
        assert failed["message"] == (
            "pod sparky-spark-source failed (exit code 1): spark-source failed: [PATH_NOT_FOUND] no /in")
        await eventually(lambda: get(k8s, PODS, "sparky-spark-sink") is None, what="the running driver removed")
        # The failed driver keeps its log while the members are kept (spec.ttlSecondsAfterFinished).
        assert get(k8s, PODS, "sparky-spark-source")["status"]["phase"] == "Failed"
        await k8s.patch(f"{COLLECTION}/sparky", json={"spec": {"ttlSecondsAfterFinished": 0}}, headers=MERGE_PATCH)
        await eventually(lambda: get(k8s, PODS, "sparky-spark-source") is None
                         and get(k8s, STATEFULSETS, "sparky-member")["spec"]["replicas"] == 0, 10,
                         what="the failed driver and the members gone with the TTL")

        await k8s.delete(f"{COLLECTION}/sparky")
        await eventually(lambda: get(k8s, JETJOBS, "sparky") is None, what="the JetJob gone")
        assert get(k8s, "v1/serviceaccounts", "sparky-spark") is None
        assert get(k8s, "rbac.authorization.k8s.io/v1/roles", "sparky-spark") is None
