"""Flink's nonces and the export history: what counts as an action rather than a new spec, how
the history is bounded and what is left to delete (pure functions); and, under Kopf against the
API emulator, a restart nonce and a TTL change on a finished job, an export asked of a job that
cannot give one, exports out of the history that cannot be deleted while member 0 does not
answer, and a savepoint upgrade whose savepoint fails with ``allowNonRestoredState``."""

from __future__ import annotations

import asyncio
import copy
import datetime

import pytest

from jet_operator.config import OperatorConfig
from jet_operator.dashboard import dashboard_address
from jet_operator.exports import (
    export_name, members_may_answer, not_deleted_message, prune, without_deleted,
)
from jet_operator.nonces import generation_hash, only_actions_changed
from jet_operator.ownership import JobRef
from jet_operator.spec import SnapshotExports, parse_spec
from tests.operator.crdschema import cel_errors
from tests.operator.emulator import Emulator
from tests.operator.fakes import STATEFULSETS, FakeJobEndpoint, eventually, get, run_statefulset
from tests.operator.test_operator import (
    COLLECTION, MERGE_PATCH, delete_jetjob, event_reasons, jetjob, operator, start_members, status, wait_phase,
)

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
SPEC = {"pipeline": {"code": "x"}, "members": {"replicas": 2}}


def test_action_fields_do_not_change_the_generation_hash() -> None:
    base = generation_hash(SPEC)
    actions = {**SPEC, "restartNonce": 3, "snapshot": {"exportNonce": "a", "historyMaxCount": 2},
               "ttlSecondsAfterFinished": 0, "allowNonRestoredState": True}
    assert generation_hash(actions) == base
    assert generation_hash({**SPEC, "members": {"replicas": 3}}) != base
    assert generation_hash({**SPEC, "suspend": True}) != base
    assert only_actions_changed(actions, {"phase": "Running", "specHash": base})
    assert not only_actions_changed(actions, {"phase": "Running"})  # started by an older operator
    assert not only_actions_changed(actions, {"specHash": base})  # never started


def test_nonces_and_history_limits_are_read_with_defaults() -> None:
    spec = parse_spec(SPEC)
    assert (spec.restart_nonce, spec.snapshot, spec.allow_non_restored_state) == (
        None, SnapshotExports(None, 10, 86400), False)
    spec = parse_spec({**SPEC, "restartNonce": 7, "snapshot": {"exportNonce": 1, "historyMaxAgeSeconds": 0},
                       "allowNonRestoredState": True})
    assert (spec.restart_nonce, spec.snapshot, spec.allow_non_restored_state) == (
        "7", SnapshotExports("1", 10, 0), True)
    with pytest.raises(ValueError, match="spec.snapshot.historyMaxCount"):
        parse_spec({**SPEC, "snapshot": {"historyMaxCount": 0}})


def _entry(name: str, age_seconds: int) -> dict:
    time = (NOW - datetime.timedelta(seconds=age_seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"name": name, "time": time}


def test_the_history_keeps_the_newest_within_count_and_age_and_the_rest_wait_for_deletion() -> None:
    exports = {"total": 4, "history": [_entry("a", 400), _entry("c", 10), _entry("b", 100), _entry("d", 5)],
               "notDeleted": ["old"]}
    pruned = prune(exports, SnapshotExports(None, 2, 300), NOW)
    assert [e["name"] for e in pruned.exports["history"]] == ["c", "d"]
    assert pruned.expired == ["a", "b"] and pruned.exports["notDeleted"] == ["old", "a", "b"]
    assert prune(exports, SnapshotExports(None, 10, 0), NOW).expired == []  # no age limit
    # The deleted (or gone) leave notDeleted; the rest wait for a later look, and come out of
    # the history only once.
    left = without_deleted(pruned.exports, ["old", "a"])
    assert left["notDeleted"] == ["b"] and [e["name"] for e in left["history"]] == ["c", "d"]
    again = prune(left, SnapshotExports(None, 2, 300), NOW)
    assert again.expired == [] and again.exports == left
    message = not_deleted_message(["a", "b"], "member 0 does not answer", SnapshotExports(None, 2, 300))
    assert message.startswith("exported snapshot(s) a, b left the history (spec.snapshot historyMaxCount 2, "
                              "historyMaxAgeSeconds 300) but could not be deleted from the snapshot store: "
                              "member 0 does not answer;")


def test_member_0_is_asked_to_delete_exports_only_while_the_members_may_run() -> None:
    assert members_may_answer({"phase": "Running"}) and members_may_answer({})
    assert not members_may_answer({"phase": "Suspended"})
    assert members_may_answer({"phase": "Completed", "membersUntil": "2026-01-02T03:04:05Z"})  # kept
    assert not members_may_answer({"phase": "Failed", "membersUntil": None})  # removed


def test_export_names_are_unique_and_valid() -> None:
    assert export_name("trades", 3, NOW) == "trades-export-20260102-030405-3"


def test_cel_refuses_an_export_nonce_without_a_guarantee() -> None:
    document = {"metadata": {"name": "wc"}, "spec": {**SPEC, "snapshot": {"exportNonce": 1}}}
    assert any("spec.snapshot.exportNonce needs a processingGuarantee" in e for e in cel_errors(document))
    document["spec"].update(processingGuarantee="exactly-once", snapshotStorage={"url": "s3://b/p"})
    assert cel_errors(document) == []


def test_the_dashboard_address_follows_the_charts_choice() -> None:
    job = JobRef("wc", "jobs", "uid")
    direct = dashboard_address(job, OperatorConfig())
    assert direct == {"url": "http://wc-member-0.wc-member.jobs.svc.cluster.local:8080/",
                      "portForward": "kubectl port-forward -n jobs pod/wc-member-0 8080:8080"}
    service = dashboard_address(job, OperatorConfig(dashboard_service_enabled=True))
    assert service["url"] == "http://wc-dashboard.jobs.svc.cluster.local:8080/"
    ingress = OperatorConfig(dashboard_ingress_enabled=True, dashboard_ingress_host="{name}.{namespace}.jet.example",
                             dashboard_ingress_tls_secret="tls-{name}")
    assert dashboard_address(job, ingress)["url"] == "https://wc.jobs.jet.example/"


async def test_a_restart_nonce_and_a_ttl_change_on_a_finished_job(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    path = f"{COLLECTION}/wc"
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await start_members(k8s)
        job_endpoint.report("wc", "COMPLETED")
        completed = await wait_phase(k8s, "Completed")
        assert completed["dashboard"]["url"] == "http://wc-member-0.wc-member.default.svc.cluster.local:8080/"
        assert completed["membersGeneration"] == 1 and completed["nonces"] == {}

        await k8s.patch(path, json={"spec": {"restartNonce": 1}}, headers=MERGE_PATCH)
        restarted = await wait_phase(k8s, "Pending")
        assert (restarted["observedGeneration"], restarted["membersGeneration"], restarted["restartCount"]) == (
            2, 1, 1), restarted
        assert restarted["nonces"]["restart"] == "1" and "result" not in restarted
        annotations = get(k8s, STATEFULSETS, "wc-member")["spec"]["template"]["metadata"]["annotations"]
        assert (annotations["jet.dev/generation"], annotations["jet.dev/attempt"]) == ("1", "1")
        await eventually(lambda: [m for _, r, m in event_reasons(k8s) if r == "Restarting"], what="the event")
        assert [m for _, r, m in event_reasons(k8s) if r == "Restarting"] == [
            "spec.restartNonce changed to '1': every member pod is replaced (restart 1)"]

        # The new attempt's members run the job again; the status follows them (generation 1).
        for pod in run_statefulset(k8s, "wc-member"):
            k8s.objects["v1/pods", "default", pod].delete()
        await eventually(lambda: status(k8s)["membersReady"] == "0/2", what="old pods gone")
        await start_members(k8s)
        job_endpoint.report("wc", "COMPLETED")
        completed = await wait_phase(k8s, "Completed")
        assert completed["observedGeneration"] == 2 and completed["membersUntil"]

        # A shorter TTL applies to the finished job's members at once.
        await k8s.patch(path, json={"spec": {"ttlSecondsAfterFinished": 0}}, headers=MERGE_PATCH)
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0, 10,
                         what="members scaled to 0")
        assert status(k8s)["restartCount"] == 1 and status(k8s)["phase"] == "Completed"
        await delete_jetjob(k8s, "wc")


def _stateful(name: str, **spec) -> dict:
    return jetjob(name, processingGuarantee="exactly-once", upgradeMode="savepoint",
                  snapshotStorage={"persistentVolumeClaim": {"claimName": "snaps"}}, **spec)


def _claim(k8s: Emulator) -> None:
    k8s.objects["v1/persistentvolumeclaims", "default", "snaps"] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "snaps", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteMany"]},
    }


async def test_an_export_the_job_cannot_give_is_a_warning_not_a_failure(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    _claim(k8s)
    with operator():
        await k8s.post(COLLECTION, json=_stateful("wc", ttlSecondsAfterFinished=0))
        await start_members(k8s)
        job_endpoint.report("wc", "COMPLETED")
        await wait_phase(k8s, "Completed")
        await k8s.patch(f"{COLLECTION}/wc", json={"spec": {"snapshot": {"exportNonce": "x"}}}, headers=MERGE_PATCH)
        exports = await eventually(lambda: status(k8s).get("snapshotExports"), what="the export's outcome")
        assert exports["total"] == 0 and exports["history"] == []
        assert exports["lastError"]["message"] == (
            "export for spec.snapshot.exportNonce 'x' failed: the job is Completed: its members are not running")
        assert status(k8s)["phase"] == "Completed" and status(k8s)["observedGeneration"] == 2
        await eventually(lambda: [e for e in event_reasons(k8s) if e[1] == "ExportFailed"], what="a warning")
        await delete_jetjob(k8s, "wc")


async def test_a_failed_savepoint_with_allow_non_restored_state_starts_the_new_spec_without_it(
        k8s: Emulator, job_endpoint: FakeJobEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    _claim(k8s)
    monkeypatch.setenv("JET_OPERATOR_MEMBER_ADDRESS_TEMPLATE", "127.0.0.1:1")  # nobody answers there
    monkeypatch.setenv("JET_OPERATOR_SNAPSHOT_ACTION_TIMEOUT_SECONDS", "2")
    with operator():
        await k8s.post(COLLECTION, json=_stateful("wc", allowNonRestoredState=True))
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING")
        await wait_phase(k8s, "Running")
        changed = copy.deepcopy(jetjob()["spec"]["pipeline"])
        changed["code"] += "# v2\n"
        await k8s.patch(f"{COLLECTION}/wc", json={"spec": {"pipeline": changed}}, headers=MERGE_PATCH)
        upgrade = await eventually(lambda: (u := status(k8s).get("upgrade") or {}).get("toGeneration") == 2
                                   and u.get("state") == "Done" and u, 30, what="the upgrade")
        assert upgrade["stateDropped"] is True and upgrade["state"] == "Done", upgrade
        assert upgrade["message"].startswith("upgradeMode savepoint: savepoint wc-g1 failed ("), upgrade
        assert "spec.allowNonRestoredState: the job could not be cancelled either" in upgrade["message"]
        assert upgrade["message"].endswith("the new spec starts from the beginning, without the state since")
        pending = await wait_phase(k8s, "Pending")
        assert pending["membersGeneration"] == 2
        await delete_jetjob(k8s, "wc")


async def test_a_suspended_job_is_not_restarted_and_old_exports_leave_the_history(
        k8s: Emulator, job_endpoint: FakeJobEndpoint) -> None:
    path = f"{COLLECTION}/wc"
    with operator():
        await k8s.post(COLLECTION, json=jetjob(suspend=True))
        await wait_phase(k8s, "Suspended")
        await k8s.patch(path, json={"spec": {"restartNonce": "r1"}}, headers=MERGE_PATCH)
        await eventually(lambda: status(k8s).get("nonces", {}).get("restart") == "r1", what="the nonce handled")
        assert status(k8s)["phase"] == "Suspended" and status(k8s)["restartCount"] == 0
        assert get(k8s, STATEFULSETS, "wc-member")["spec"]["replicas"] == 0
        await eventually(lambda: [m for _, r, m in event_reasons(k8s) if r == "RestartSkipped"], what="the event")

        # An export older than historyMaxAgeSeconds (default one day) leaves the history at the
        # operator's next look, whatever the phase; it is deleted through member 0, which does
        # not answer here (the job's members do not run), so the status keeps its name.
        old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        await k8s.patch(f"{path}/status", headers=MERGE_PATCH, json={"status": {"snapshotExports": {
            "total": 1, "history": [{"name": "wc-export-old-1", "time": old}]}}})
        await k8s.patch(path, json={"spec": {"suspend": False}}, headers=MERGE_PATCH)  # followed again
        exports = await eventually(lambda: (e := status(k8s).get("snapshotExports") or {}).get("notDeleted") and e,
                                   what="the old export out of the history")
        assert exports["history"] == [] and exports["notDeleted"] == ["wc-export-old-1"]
        warnings = await eventually(lambda: [m for k, r, m in event_reasons(k8s) if r == "ExportsNotDeleted"],
                                    what="an ExportsNotDeleted warning")
        assert warnings[0].startswith("exported snapshot(s) wc-export-old-1 left the history (spec.snapshot "
                                      "historyMaxCount 10, historyMaxAgeSeconds 86400) but could not be deleted "
                                      "from the snapshot store: member 0 does not answer;"), warnings
        await delete_jetjob(k8s, "wc")


async def test_exports_member_0_cannot_delete_stay_named_and_are_warned_about_once(
        k8s: Emulator, job_endpoint: FakeJobEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JET_OPERATOR_MEMBER_ADDRESS_TEMPLATE", "127.0.0.1:1")  # its gRPC port: nobody
    path = f"{COLLECTION}/wc"
    with operator():
        await k8s.post(COLLECTION, json=jetjob())
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING")
        await wait_phase(k8s, "Running")
        old = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        await k8s.patch(f"{path}/status", headers=MERGE_PATCH, json={"status": {"snapshotExports": {
            "total": 2, "history": [{"name": "wc-export-old-1", "time": old}], "notDeleted": ["wc-export-0"]}}})
        exports = await eventually(lambda: (e := status(k8s).get("snapshotExports") or {}).get("history") == []
                                   and e, what="the old export out of the history")
        assert exports["notDeleted"] == ["wc-export-0", "wc-export-old-1"]
        (warning,) = await eventually(lambda: [m for _, r, m in event_reasons(k8s) if r == "ExportsNotDeleted"],
                                      what="an ExportsNotDeleted warning")
        assert warning.startswith("exported snapshot(s) wc-export-old-1 left the history"), warning
        assert "delete exported snapshot(s) wc-export-0, wc-export-old-1 at 127.0.0.1:1 failed" in warning
        # Later looks try again (and fail again) without another warning or losing a name.
        await asyncio.sleep(2)
        assert [r for _, r, _ in event_reasons(k8s)].count("ExportsNotDeleted") == 1
        assert status(k8s)["snapshotExports"]["notDeleted"] == ["wc-export-0", "wc-export-old-1"]
        assert "ExportsDeleted" not in [r for _, r, _ in event_reasons(k8s)]
        await delete_jetjob(k8s, "wc")


async def test_a_restart_nonce_replaces_the_members_when_member_0_does_not_answer(
        k8s: Emulator, job_endpoint: FakeJobEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JET_OPERATOR_MEMBER_ADDRESS_TEMPLATE", "127.0.0.1:1")  # its gRPC port: nobody
    with operator():
        await k8s.post(COLLECTION, json=jetjob(restartNonce=0))
        await start_members(k8s)
        job_endpoint.report("wc", "RUNNING")
        running = await wait_phase(k8s, "Running")
        assert running["nonces"] == {"restart": "0"}  # the nonce a JetJob is made with asks nothing
        await k8s.patch(f"{COLLECTION}/wc", json={"spec": {"restartNonce": 1}}, headers=MERGE_PATCH)
        restarted = await wait_phase(k8s, "Pending")
        assert (restarted["restartCount"], restarted["membersGeneration"], restarted["observedGeneration"]) == (
            1, 1, 2)
        annotations = get(k8s, STATEFULSETS, "wc-member")["spec"]["template"]["metadata"]["annotations"]
        assert annotations["jet.dev/attempt"] == "1"
        await delete_jetjob(k8s, "wc")
