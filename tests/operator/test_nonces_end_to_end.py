"""Flink's nonces on a real job: the operator under Kopf, the API emulator, member pods run as
real ``jet member`` processes by the kubelet stand-in, snapshots in a claim (a directory).

A streaming exactly-once job (the sequences of ``test_exactly_once_end_to_end``) is asked for
two exported snapshots through ``spec.snapshot.exportNonce`` with a history of one, then
restarted through ``spec.restartNonce``: each is carried out on the running job (the member
processes stay, ``status.membersGeneration`` stays 1 while ``observedGeneration`` follows),
the exports are in the store and in the status, the one that left the history is deleted from
the store by member 0, and the output after the restart is still exactly once. Then, the job
suspended (no member runs), a shorter ``historyMaxAgeSeconds`` pushes the last export out of
the history: it cannot be deleted, stays in the store and in ``notDeleted``, and is deleted once
the job is resumed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from jet.snapshot import SnapshotStore

from tests.operator.emulator import Emulator
from tests.operator.fakes import eventually
from tests.operator.kubelet import Kubelet
from tests.operator.test_end_to_end import kubelet  # noqa: F401
from tests.operator.test_exactly_once_end_to_end import (
    committed, jetjob_status, oracle_problems, sequences_jetjob, snapshot_after, start_operator,
)
from tests.operator.test_operator import COLLECTION, MERGE_PATCH, delete_jetjob, event_reasons, wait_phase

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _pids(kubelet: Kubelet) -> set[int]:
    return {process.pid for process in kubelet.processes() if process.poll() is None}


async def test_export_and_restart_nonces_act_on_the_running_job(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    name = "nonce"
    document, out = sequences_jetjob(k8s, tmp_path, name, snapshot={"historyMaxCount": 1})
    path = f"{COLLECTION}/{name}"
    with start_operator(kubelet, monkeypatch, name):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        running = await wait_phase(k8s, "Running", name, timeout=60)
        job_id = running["jobId"]
        await snapshot_after(k8s, name, 0)
        pids = _pids(kubelet)
        assert len(pids) == 2

        exported = []
        for nonce in (1, 2):
            await k8s.patch(path, json={"spec": {"snapshot": {"exportNonce": nonce}}}, headers=MERGE_PATCH)
            exports = await eventually(lambda: (e := jetjob_status(k8s, name).get("snapshotExports") or {})
                                       .get("total") == nonce and e, 60, what=f"export {nonce}")
            (entry,) = exports["history"]  # historyMaxCount 1
            assert entry["name"].startswith(f"{name}-export-") and entry["name"].endswith(f"-{nonce}"), entry
            assert (entry["nonce"], entry["jobId"]) == (str(nonce), job_id) and entry["keys"] > 0, entry
            assert (kubelet.claim_directory("snaps") / "exports" / entry["name"]).is_dir()
            exported.append(entry["name"])
        status = jetjob_status(k8s, name)
        assert status["snapshotExports"]["notDeleted"] == []  # the first left the history: deleted
        store = SnapshotStore(str(kubelet.claim_directory("snaps")))
        assert store.list_exports() == exported[1:]
        assert (status["observedGeneration"], status["membersGeneration"], status["phase"]) == (3, 1, "Running")
        assert _pids(kubelet) == pids  # no member was replaced
        deleted = await eventually(lambda: [m for _, r, m in event_reasons(k8s, name) if r == "ExportsDeleted"],
                                   10, what="an ExportsDeleted event")
        assert deleted == [f"exported snapshot(s) {exported[0]} deleted from the snapshot store: out of the "
                           "history (spec.snapshot historyMaxCount 1, historyMaxAgeSeconds 86400)"], deleted
        reasons = [(kind, reason) for kind, reason, _ in event_reasons(k8s, name)]
        assert reasons.count(("Normal", "SnapshotExported")) == 2 and ("Warning", "ExportsNotDeleted") not in reasons

        count = len(committed(out))
        await k8s.patch(path, json={"spec": {"restartNonce": "after-exports"}}, headers=MERGE_PATCH)
        said = await eventually(lambda: [m for _, r, m in event_reasons(k8s, name) if r == "Restarting"], 60,
                                what="a Restarting event")
        assert said == [f"spec.restartNonce changed to 'after-exports': job {job_id} restarts from a terminal "
                        "snapshot"], said
        await eventually(lambda: jetjob_status(k8s, name).get("nonces", {}).get("restart") == "after-exports",
                         what="the nonce handled")
        await eventually(lambda: len(committed(out)) > count + 10, 60, what="output after the restart")
        status = jetjob_status(k8s, name)
        assert (status["phase"], status["jobId"], status["membersGeneration"], status["restartCount"]) == (
            "Running", job_id, 1, 0), status
        assert _pids(kubelet) == pids
        assert oracle_problems(committed(out), ["v1"]) == [], kubelet.logs()

        # Suspended, no member answers: an export pushed out of the history stays, named.
        await k8s.patch(path, json={"spec": {"suspend": True}}, headers=MERGE_PATCH)
        await wait_phase(k8s, "Suspended", name, timeout=90)
        await k8s.patch(path, json={"spec": {"snapshot": {"historyMaxAgeSeconds": 1}}}, headers=MERGE_PATCH)
        exports = await eventually(lambda: (e := jetjob_status(k8s, name)["snapshotExports"])["history"] == [] and e,
                                   30, what="the last export out of the history")
        assert exports["notDeleted"] == exported[1:] and store.list_exports() == exported[1:]
        (warning,) = await eventually(
            lambda: [m for _, r, m in event_reasons(k8s, name) if r == "ExportsNotDeleted"], 10,
            what="an ExportsNotDeleted warning")
        assert warning.startswith(f"exported snapshot(s) {exported[1]} left the history (spec.snapshot "
                                  "historyMaxCount 1, historyMaxAgeSeconds 1) but could not be deleted from the "
                                  "snapshot store: the job's members are not running (phase Suspended)"), warning

        # A name the store does not have (deleted by hand, say) counts as deleted: nothing is
        # written while the job stays suspended, so the status patch is not overwritten.
        await k8s.patch(f"{path}/status", headers=MERGE_PATCH, json={"status": {"snapshotExports": {
            "notDeleted": [*exported[1:], f"{name}-export-by-hand"]}}})

        # Resumed, member 0 answers again: a later look deletes it.
        await k8s.patch(path, json={"spec": {"suspend": False}}, headers=MERGE_PATCH)
        await wait_phase(k8s, "Running", name, timeout=90)
        await eventually(lambda: jetjob_status(k8s, name)["snapshotExports"]["notDeleted"] == [], 60,
                         what="the export deleted after the resume")
        assert store.list_exports() == []
        deleted = [m for _, r, m in event_reasons(k8s, name) if r == "ExportsDeleted"]
        assert deleted[-1] == (f"exported snapshot(s) {exported[1]}, {name}-export-by-hand deleted from the "
                               f"snapshot store ({name}-export-by-hand gone already): out of the history "
                               "(spec.snapshot historyMaxCount 1, historyMaxAgeSeconds 1)"), deleted
        await delete_jetjob(k8s, name)
