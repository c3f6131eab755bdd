"""The phase decisions, restart policy and conditions, as pure functions; and the restart
policy over a job's whole life, with the operator under Kopf against the API emulator."""

from __future__ import annotations

import datetime

import pytest

from jet_operator.lifecycle import (
    JobReport,
    Phase,
    PodView,
    assess,
    build_conditions,
    decide_restart,
    format_time,
)
from jet_operator.spec import RestartPolicy
from tests.operator.emulator import Emulator
from tests.operator.fakes import JETJOBS, PODS, STATEFULSETS, FakeJobEndpoint, eventually, get, names
from tests.operator.fakes import run_statefulset, set_pod_status
from tests.operator.test_operator import COLLECTION, jetjob, operator, status, wait_phase

NOW = datetime.datetime(2025, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)


def pod(name: str = "wc-member-0", *, phase: str = "Running", scheduled: bool = True, ready: bool = True,
        waiting: str | None = None, age_seconds: float = 5) -> PodView:
    status = {
        "phase": phase,
        "conditions": [{"type": "PodScheduled", "status": "True" if scheduled else "False",
                        "message": "0/3 nodes are available: insufficient cpu"},
                       {"type": "Ready", "status": "True" if ready else "False"}],
    }
    if waiting:
        status["containerStatuses"] = [{"state": {"waiting": {"reason": waiting, "message": "no such image"}}}]
    created = NOW - datetime.timedelta(seconds=age_seconds)
    return PodView.of({"metadata": {"name": name, "creationTimestamp": format_time(created)}, "status": status})


def _assess(pods, job=None, spark=(), desired=2, timeout=60.0):
    return assess(desired=desired, member_pods=pods, spark_pods=list(spark), job=job, now=NOW,
                  scheduling_timeout_seconds=timeout)


def test_no_pods_is_pending() -> None:
    assert _assess([]).phase == Phase.PENDING


def test_unscheduled_pod_is_pending_until_the_timeout() -> None:
    waiting = [pod(), pod("wc-member-1", phase="Pending", scheduled=False, ready=False, age_seconds=30)]
    assert _assess(waiting).phase == Phase.PENDING
    late = [pod(), pod("wc-member-1", phase="Pending", scheduled=False, ready=False, age_seconds=90)]
    result = _assess(late)
    assert result.phase == Phase.FAILED
    assert "scheduling timeout 60s" in result.message and "insufficient cpu" in result.message


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff"])
def test_pods_that_cannot_start_fail_the_job(reason: str) -> None:
    result = _assess([pod(), pod("wc-member-1", phase="Pending", ready=False, waiting=reason)])
    assert result.phase == Phase.FAILED
    assert result.message == f"pod wc-member-1: {reason}: no such image"


def test_scheduled_but_not_ready_is_starting() -> None:
    result = _assess([pod(), pod("wc-member-1", ready=False, waiting="ContainerCreating")])
    assert (result.phase, result.ready) == (Phase.STARTING, 1)
    assert result.message == "members ready: 1/2 (not yet: wc-member-1)"


def test_the_coordinators_message_follows_the_jobs_status() -> None:
    resuming = JobReport.of({"jobId": "j1", "status": "STARTING", "message": "resuming from snapshot 4"})
    assert _assess([pod(), pod("wc-member-1")], job=resuming).message == "job j1 is STARTING: resuming from snapshot 4"
    running = JobReport.of({"jobId": "j1", "status": "RUNNING", "message": ""})
    assert _assess([pod(), pod("wc-member-1")], job=running).message == "job j1 is RUNNING"


@pytest.mark.parametrize(("status", "phase"), [
    ("NOT_RUNNING", Phase.STARTING), ("STARTING", Phase.STARTING), ("RUNNING", Phase.RUNNING),
    ("COMPLETING", Phase.COMPLETING), ("COMPLETED", Phase.COMPLETED), ("FAILED", Phase.FAILED),
])
def test_the_coordinators_report_decides_once_members_are_ready(status: str, phase: Phase) -> None:
    report = JobReport.of({"jobId": "j1", "status": status, "message": "ValueError: x"})
    assert _assess([pod(), pod("wc-member-1")], job=report).phase == phase


def test_all_ready_without_a_report_is_starting() -> None:
    assert _assess([pod(), pod("wc-member-1")]).message.startswith("waiting for the coordinator")


def test_a_failed_spark_driver_fails_the_job() -> None:
    driver = pod("wc-spark-source", phase="Failed", ready=False)
    result = _assess([pod(), pod("wc-member-1")], spark=[driver])
    assert (result.phase, result.message) == (Phase.FAILED, "pod wc-spark-source failed")


def driver(name: str, phase: str, exit_code: int | None = None, log_tail: str = "") -> PodView:
    status: dict = {"phase": phase}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": "driver", "state": {
            "terminated": {"exitCode": exit_code, "message": log_tail}}}]
    return PodView.of({"metadata": {"name": name}, "status": status})


def test_a_failed_spark_driver_fails_the_job_with_the_end_of_its_log() -> None:
    log_tail = "\n".join([*(f"INFO line {i}" for i in range(20)),
                          "spark-sink failed: [PATH_ALREADY_EXISTS] Path file:/out already exists.",
                          "\tat org.apache.spark.sql.Dataset.write(Dataset.scala:1)", ""])
    result = _assess([pod(), pod("wc-member-1")], spark=[driver("wc-spark-sink", "Failed", 1, log_tail)])
    assert result.phase == Phase.FAILED
    assert result.message.startswith("pod wc-spark-sink failed (exit code 1): ")
    lines = result.message.split(": ", 1)[1].splitlines()
    assert lines[-1] == "spark-sink failed: [PATH_ALREADY_EXISTS] Path file:/out already exists."
    assert len(lines) == 12 and "Dataset.scala" not in result.message


def test_a_completed_job_waits_for_its_spark_drivers() -> None:
    report = JobReport.of({"jobId": "j1", "status": "COMPLETED"})
    members = [pod(), pod("wc-member-1")]
    writing = _assess(members, job=report, spark=[driver("wc-spark-source", "Succeeded", 0),
                                                  driver("wc-spark-sink", "Running")])
    assert (writing.phase, writing.message) == (
        Phase.COMPLETING, "the job completed; waiting for Spark driver(s) wc-spark-sink")
    failed = _assess(members, job=report, spark=[driver("wc-spark-sink", "Failed", 1, "spark-sink failed: x")])
    assert (failed.phase, failed.message) == (
        Phase.FAILED, "pod wc-spark-sink failed (exit code 1): spark-sink failed: x")
    done = _assess(members, job=report, spark=[driver("wc-spark-source", "Succeeded", 0),
                                               driver("wc-spark-sink", "Succeeded", 0)])
    assert (done.phase, done.message) == (Phase.COMPLETED, "the job completed")


@pytest.mark.parametrize(("policy", "retries_used", "phase", "restart"), [
    (RestartPolicy("Never", 3, 5), 0, Phase.FAILED, False),
    (RestartPolicy("OnFailure", 3, 5), 0, Phase.FAILED, True),
    (RestartPolicy("OnFailure", 3, 5), 3, Phase.FAILED, False),
    (RestartPolicy("OnFailure", 3, 5), 0, Phase.COMPLETED, False),
    (RestartPolicy("Always", 0, 5), 0, Phase.COMPLETED, True),
    (RestartPolicy("Always", 1, 5), 0, Phase.FAILED, True),
    (RestartPolicy("Always", 1, 5), 1, Phase.FAILED, False),
])
def test_restart_policy(policy: RestartPolicy, retries_used: int, phase: Phase, restart: bool) -> None:
    decision = decide_restart(policy, retries_used, phase)
    assert decision.restart is restart
    assert decision.delay_seconds == (5 if restart else 0)


def test_only_failures_spend_retries() -> None:
    always = RestartPolicy("Always", 1, 0)
    completed = decide_restart(always, 0, Phase.COMPLETED)
    assert completed.restart and completed.retries_used == 0
    failed = decide_restart(always, completed.retries_used, Phase.FAILED)
    assert failed.restart and failed.retries_used == 1
    assert not decide_restart(always, failed.retries_used, Phase.FAILED).restart


async def _run_attempt(k8s: Emulator, job_endpoint: FakeJobEndpoint, name: str, attempt: int) -> None:
    """Play the StatefulSet controller and kubelet for attempt ``attempt``'s members, up to Running."""
    def members_of_this_attempt() -> bool:
        sts = get(k8s, STATEFULSETS, f"{name}-member")
        return bool(sts) and sts["spec"]["replicas"] == 2 and (
            sts["spec"]["template"]["metadata"]["annotations"]["jet.dev/attempt"] == str(attempt))

    await eventually(members_of_this_attempt, what=f"the StatefulSet of attempt {attempt}")
    await eventually(lambda: not names(k8s, PODS), what="the pods of the previous attempt deleted")
    job_endpoint.report(name, "RUNNING")
    for pod in run_statefulset(k8s, f"{name}-member"):
        set_pod_status(k8s, pod, ready=True)
    await wait_phase(k8s, "Running", name)


async def test_always_restarts_completed_runs_without_spending_retries(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    """docs/operator.md: with ``Always`` a completed job restarts without limit and only
    failures count against ``maxRetries``. Two completed runs leave the one retry unspent, so
    the failure after them is retried, and only the second failure is final."""
    name = "nightly"
    with operator():
        await k8s.post(COLLECTION, json=jetjob(
            name, restartPolicy={"type": "Always", "maxRetries": 1, "backoffSeconds": 0}))
        for attempt, outcome in enumerate(["COMPLETED", "COMPLETED", "FAILED"]):
            await _run_attempt(k8s, job_endpoint, name, attempt)
            job_endpoint.report(name, outcome, message="boom" if outcome == "FAILED" else "")
            await eventually(lambda: status(k8s, name).get("restartCount") == attempt + 1,
                             what=f"restart {attempt + 1}, after the job ended {outcome}")
        assert status(k8s, name)["retriesUsed"] == 1

        await _run_attempt(k8s, job_endpoint, name, 3)
        job_endpoint.report(name, "FAILED", message="boom again")
        failed = await wait_phase(k8s, "Failed", name)
        assert failed["message"] == "the job failed: boom again"
        assert failed["restartCount"] == 3 and failed["retriesUsed"] == 1
        assert "restartAt" not in failed
        # Gone before the operator stops, so that no timer of it is in flight then.
        await k8s.delete(f"{COLLECTION}/{name}")
        await eventually(lambda: get(k8s, JETJOBS, name) is None, what="the JetJob gone")


def test_conditions_keep_their_transition_time_while_unchanged() -> None:
    first = build_conditions(Phase.RUNNING, "up", [], 3, NOW)
    assert {c["type"]: c["status"] for c in first} == {"Ready": "True", "Progressing": "False", "Degraded": "False"}
    later = NOW + datetime.timedelta(minutes=5)
    second = build_conditions(Phase.FAILED, "boom", first, 3, later)
    by_type = {c["type"]: c for c in second}
    assert by_type["Degraded"]["status"] == "True"
    assert by_type["Degraded"]["lastTransitionTime"] == format_time(later)
    assert by_type["Progressing"]["lastTransitionTime"] == format_time(NOW)
    assert all(c["observedGeneration"] == 3 and c["reason"] == "Failed" for c in second)
