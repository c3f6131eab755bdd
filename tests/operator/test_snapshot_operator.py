"""The operator (under Kopf, against the API emulator) with the fault-tolerance fields: a spec
that keeps state without a store, or names a missing claim or Secret, fails with the reason (the
emulator does not run the CRD's CEL rules: the operator checks them again); the status shows
the job's restarts and last snapshot as member 0's ``/job`` reports them, and a restart is a
Warning event naming its cause."""

from __future__ import annotations

import base64

from tests.operator.emulator import Emulator
from tests.operator.fakes import STATEFULSETS, FakeJobEndpoint, eventually, get
from tests.operator.test_operator import COLLECTION, event_reasons, jetjob, operator, start_members, wait_phase

S3 = {"url": "s3://snapshots/ft", "credentialsSecret": "s3-creds"}


async def test_a_guarantee_without_a_store_fails_naming_the_field(k8s: Emulator) -> None:
    with operator():
        await k8s.post(COLLECTION, json=jetjob("nostore", processingGuarantee="exactly-once",
                                               upgradeMode="savepoint"))
        failed = await wait_phase(k8s, "Failed", "nostore")
        assert failed["message"] == (
            "spec.processingGuarantee 'exactly-once' needs spec.snapshotStorage (where the job's snapshots are "
            "kept); spec.upgradeMode 'savepoint' needs spec.snapshotStorage (where the job's snapshots are kept)")
        assert get(k8s, STATEFULSETS, "nostore-member") is None
        await eventually(lambda: any(kind == "Warning" and "snapshotStorage" in text
                                     for kind, _, text in event_reasons(k8s, "nostore")), what="a warning event")


async def test_a_missing_claim_or_credentials_secret_fails_naming_it(k8s: Emulator) -> None:
    k8s.objects["v1/secrets", "default", "half-creds"] = {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "half-creds", "namespace": "default"},
        "data": {"AWS_ACCESS_KEY_ID": base64.b64encode(b"id").decode()},
    }
    with operator():
        await k8s.post(COLLECTION, json=jetjob("noclaim", processingGuarantee="at-least-once",
                                               snapshotStorage={"persistentVolumeClaim": {"claimName": "gone"}}))
        await k8s.post(COLLECTION, json=jetjob("nokeys", processingGuarantee="at-least-once",
                                               snapshotStorage={**S3, "credentialsSecret": "half-creds"}))
        await k8s.post(COLLECTION, json=jetjob("nocreds", processingGuarantee="at-least-once", snapshotStorage=S3))
        claim = await wait_phase(k8s, "Failed", "noclaim")
        assert claim["message"] == ("spec.snapshotStorage.persistentVolumeClaim: PersistentVolumeClaim 'gone' "
                                    "not found in namespace 'default'")
        keys = await wait_phase(k8s, "Failed", "nokeys")
        assert keys["message"] == ("spec.snapshotStorage.credentialsSecret: Secret 'half-creds' has no key "
                                   "AWS_SECRET_ACCESS_KEY")
        creds = await wait_phase(k8s, "Failed", "nocreds")
        assert "Secret 's3-creds' not found" in creds["message"]


async def test_the_status_shows_restarts_and_the_last_snapshot_from_member_0(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    k8s.objects["v1/persistentvolumeclaims", "default", "snaps"] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "snaps", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteMany"]},
    }
    document = jetjob(processingGuarantee="exactly-once", snapshotIntervalSeconds=1,
                      snapshotStorage={"persistentVolumeClaim": {"claimName": "snaps"}})
    with operator():
        await k8s.post(COLLECTION, json=document)
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING", processingGuarantee="EXACTLY_ONCE", restarts=0, snapshotCount=0,
                            lastSnapshot=None)
        running = await wait_phase(k8s, "Running")
        assert (running["restarts"], running["snapshotCount"], running["suspended"]) == (0, 0, False)
        assert "lastSnapshot" not in running and running.get("startSnapshot") is None
        job_endpoint.report("wc", "RUNNING", processingGuarantee="EXACTLY_ONCE", restarts=1,
                            lastRestartCause="member 1 lost: connection reset", snapshotCount=5,
                            lastSnapshot={"id": 6, "time": "2026-01-02T03:04:05Z", "bytes": 4096, "keys": 12,
                                          "durationMs": 20})
        status = await eventually(lambda: (s := get(k8s, "jet.dev/v1alpha1/jetjobs", "wc")["status"])
                                  .get("restarts") == 1 and s, what="the restart in the status")
        assert status["lastRestartCause"] == "member 1 lost: connection reset"
        assert status["lastSnapshot"] == {"id": 6, "time": "2026-01-02T03:04:05Z", "bytes": 4096, "keys": 12,
                                          "durationMs": 20}
        assert (status["snapshotCount"], status["processingGuarantee"], status["phase"]) == (
            5, "EXACTLY_ONCE", "Running")
        await eventually(lambda: [e for e in event_reasons(k8s) if e[1] == "Restarted"], what="the Restarted event")
        assert [(kind, text) for kind, reason, text in event_reasons(k8s) if reason == "Restarted"] == [
            ("Warning", "job 0a1b2c3d restarted (restart 1): member 1 lost: connection reset; "
                        "it continues from its last snapshot")]
        # Another job under the JetJob (a new generation's) starts its own count: no event for it.
        job_endpoint.report("wc", "RUNNING", jobId="ffff0000", processingGuarantee="EXACTLY_ONCE", restarts=3,
                            lastRestartCause="the coordinator restarted")
        await eventually(lambda: get(k8s, "jet.dev/v1alpha1/jetjobs", "wc")["status"]["jobId"] == "ffff0000",
                         what="the new job id in the status")
        job_endpoint.report("wc", "RUNNING", jobId="ffff0000", processingGuarantee="NONE", restarts=4,
                            lastRestartCause="member(s) 2 lost")
        await eventually(lambda: len([e for e in event_reasons(k8s) if e[1] == "Restarted"]) == 2,
                         what="the second Restarted event")
        assert [text for _, reason, text in event_reasons(k8s) if reason == "Restarted"][1:] == [
            "job ffff0000 restarted (restart 4): member(s) 2 lost; "
            "it starts again from the beginning (no processing guarantee)"]
