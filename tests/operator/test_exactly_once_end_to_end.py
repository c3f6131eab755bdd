"""Fault tolerance end to end: the operator under Kopf, the API emulator, member pods run as real
``jet member`` processes by the kubelet stand-in, snapshots in a PersistentVolumeClaim (a
directory the stand-in shares between pods).

A streaming job with exactly-once writes the sequence numbers of ``Sources.item_stream`` (one
source per member) to a ``jsonl`` sink in a shared directory; the test deletes member 1's pod,
later member 0's pod, changes the spec with ``upgradeMode: savepoint``, suspends and resumes
the job. The committed output must then be exactly what a plain-Python oracle says: every
sequence number of each source, from its first up to the last one committed, once. On the way
it times each recovery (printed with ``pytest -s``) and checks what the user is told: the
``Restarted`` events with their causes, the upgrade's, suspension's and resumption's messages.
"""

from __future__ import annotations

import base64
import collections
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jet_operator.jobclient import fetch_job_report
from tests.operator.emulator import Emulator
from tests.operator.fakes import JETJOBS, PODS, eventually, get, names
from tests.operator.kubelet import Kubelet
from tests.operator.test_end_to_end import kubelet, member_code  # noqa: F401
from tests.operator.test_operator import (
    COLLECTION, MERGE_PATCH, delete_jetjob, event_reasons, jetjob, operator, wait_phase,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SOURCES = 2  # one item_stream source per member


def _claim(k8s: Emulator, name: str) -> None:
    k8s.objects["v1/persistentvolumeclaims", "default", name] = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteMany"]},
    }


def start_operator(kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, job: str):
    """The operator, reading ``job``'s member 0 (HTTP and gRPC) where the stand-in puts it."""
    monkeypatch.setenv("JET_OPERATOR_JOB_URL_TEMPLATE", kubelet.job_url(f"{job}-member"))
    monkeypatch.setenv("JET_OPERATOR_MEMBER_ADDRESS_TEMPLATE", f"{kubelet.address(f'{job}-member', 0)}:{{port}}")
    monkeypatch.setenv("JET_OPERATOR_SNAPSHOT_ACTION_TIMEOUT_SECONDS", "60")
    return operator()


def sequences_pipeline(out: Path, version: str) -> str:
    return member_code(f"""
        from jet import Pipeline, Sinks, Sources


        def pipeline():
            p = Pipeline.create()
            (p.read_from(Sources.item_stream(100)).set_local_parallelism(1)
              .with_native_timestamps(0)
              .map(lambda event: [{version!r}, event.sequence])
              .write_to(Sinks.jsonl({str(out)!r})))
            return p
    """)


def committed(out: Path) -> list[list[Any]]:
    """The lines of the sink's committed files (in-progress files are hidden: dot-prefixed or
    ``.tmp``-suffixed)."""
    lines = []
    for path in sorted(out.rglob("*")):
        if path.is_file() and not path.name.startswith(".") and not path.name.endswith(".tmp"):
            lines += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines


def oracle_problems(lines: list[list[Any]], versions: list[str]) -> list[str]:
    """Plain Python: each source's sequences (``s % SOURCES``) are ``r, r + SOURCES, ...`` up to
    its highest, each once; within a source a later pipeline version only follows an earlier."""
    problems = []
    duplicates = [item for item, count in collections.Counter(seq for _, seq in lines).items() if count > 1]
    if duplicates:
        problems.append(f"duplicates: {sorted(duplicates)[:10]}")
    for residue in range(SOURCES):
        seen = sorted(seq for _, seq in lines if seq % SOURCES == residue)
        expected = list(range(residue, (seen[-1] if seen else residue - SOURCES) + 1, SOURCES))
        if seen != expected:
            problems.append(f"source {residue}: lost {sorted(set(expected) - set(seen))[:10]}")
        order = [versions.index(version) for version, seq in sorted(lines, key=lambda line: line[1])
                 if seq % SOURCES == residue]
        if order != sorted(order):
            problems.append(f"source {residue}: versions out of order")
    return problems


def jetjob_status(k8s: Emulator, name: str) -> dict[str, Any]:
    return (get(k8s, JETJOBS, name) or {}).get("status") or {}


async def snapshot_after(k8s: Emulator, name: str, snapshot_id: int, timeout: float = 60) -> int:
    """Wait for a snapshot newer than ``snapshot_id``; its id."""
    def newer() -> int | None:
        last = jetjob_status(k8s, name).get("lastSnapshot") or {}
        return last.get("id") if (last.get("id") or 0) > snapshot_id else None
    return await eventually(newer, timeout, what=f"a snapshot after {snapshot_id}")


async def test_the_store_claim_and_its_credentials_reach_the_members(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plumbing alone (no guarantee needed): the claim is one directory every member sees
    as ``$JET_SNAPSHOT_STORE``."""
    _claim(k8s, "snaps")
    seen = tmp_path / "seen"
    seen.mkdir()
    code = member_code(f"""
        import json
        import os

        from jet import Pipeline, Sinks, Sources


        def note(item):
            store = os.environ["JET_SNAPSHOT_STORE"]
            os.makedirs(store, exist_ok=True)  # the store makes its directory; this job has none
            with open(os.path.join(store, "hello-" + os.environ["POD_NAME"]), "w") as file:
                file.write("hi")
            with open(os.path.join({str(seen)!r}, os.environ["POD_NAME"]), "w") as file:
                json.dump(store, file)
            return item


        def pipeline():
            p = Pipeline.create()
            p.read_from(Sources.items(range(10))).map(note).write_to(Sinks.noop())
            return p
    """)
    document = jetjob("plumb", pipeline={"code": code},
                      snapshotStorage={"persistentVolumeClaim": {"claimName": "snaps"}, "path": "jobs/plumb"})
    with start_operator(kubelet, monkeypatch, "plumb"):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        await wait_phase(k8s, "Completed", "plumb", timeout=60)
        store = kubelet.claim_directory("snaps") / "jobs" / "plumb"
        pods = {path.name for path in seen.iterdir()}
        assert pods and all(json.loads((seen / pod).read_text()) == str(store) for pod in pods), kubelet.logs()
        assert {path.name for path in store.iterdir()} >= {f"hello-{pod}" for pod in pods}
        await delete_jetjob(k8s, "plumb")


def sequences_jetjob(k8s: Emulator, tmp_path: Path, name: str, **spec: Any) -> tuple[dict[str, Any], Path]:
    """An exactly-once JetJob of :func:`sequences_pipeline` (v1) snapshotting every 0.5 s into
    claim ``snaps``, and its output directory."""
    _claim(k8s, "snaps")
    out = tmp_path / "out"
    out.mkdir()
    document = jetjob(name, pipeline={"code": sequences_pipeline(out, "v1")},
                      processingGuarantee="exactly-once", snapshotIntervalSeconds=0.5,
                      snapshotStorage={"persistentVolumeClaim": {"claimName": "snaps"}}, **spec)
    return document, out


async def test_exactly_once_survives_lost_pods_a_savepoint_upgrade_and_suspend(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    name = "eo"
    document, out = sequences_jetjob(k8s, tmp_path, name, upgradeMode="savepoint")
    seen = []  # printed after the operator: its runner captures stdout meanwhile
    with start_operator(kubelet, monkeypatch, name):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        await wait_phase(k8s, "Running", name, timeout=60)
        last = await snapshot_after(k8s, name, 0)

        for lost, cause in ((f"{name}-member-1", "member 1 stopped"), (f"{name}-member-0", "coordinator restarted")):
            restarts = jetjob_status(k8s, name).get("restarts", 0)
            seen.append(f"{lost} deleted: {await lose_pod(k8s, kubelet, name, lost, out)}")
            now = jetjob_status(k8s, name)
            assert now["restarts"] == restarts + 1 and cause in now["lastRestartCause"], now
            await eventually(lambda: [e for e in event_reasons(k8s, name) if e[1] == "Restarted" and cause in e[2]],
                             10, what=f"a Restarted event naming {cause!r}")  # posted after the status
            last = await snapshot_after(k8s, name, last)
        assert oracle_problems(committed(out), ["v1"]) == [], kubelet.logs()

        changed = {"spec": {"pipeline": {"code": sequences_pipeline(out, "v2")}}}
        await k8s.patch(f"{COLLECTION}/{name}", json=changed, headers=MERGE_PATCH)
        upgrade = await eventually(lambda: (u := jetjob_status(k8s, name).get("upgrade") or {})
                                   .get("toGeneration") == 2 and u.get("state") == "Done" and u, 90,
                                   what="the savepoint upgrade")
        assert upgrade["snapshot"] == f"{name}-g1" and upgrade["mode"] == "savepoint"
        assert jetjob_status(k8s, name)["startSnapshot"] == f"{name}-g1"
        await wait_phase(k8s, "Running", name, timeout=60)
        await eventually(lambda: any(version == "v2" for version, _ in committed(out)), 60, what="v2 output")

        for suspend in (True, False, True):
            processes = kubelet.processes()
            await k8s.patch(f"{COLLECTION}/{name}", json={"spec": {"suspend": suspend}}, headers=MERGE_PATCH)
            if suspend:
                suspended = await wait_phase(k8s, "Suspended", name, timeout=90)
                assert suspended["suspended"] is True and "took terminal snapshot" in suspended["message"]
                await eventually(lambda: not names(k8s, PODS), 30, what="member pods deleted")
                await eventually(lambda: all(p.poll() is not None for p in processes), 30, what="members exited")
                lines = committed(out)
                assert oracle_problems(lines, ["v1", "v2"]) == [], kubelet.logs()
            else:
                await wait_phase(k8s, "Running", name, timeout=60)
                count = len(lines)
                await eventually(lambda: len(committed(out)) > count, 60, what="output after resuming")
        assert {version for version, _ in lines} == {"v1", "v2"}
        events = event_reasons(k8s, name)
        seen += [f"event {kind} {reason}: {message}" for kind, reason, message in events]
        said = {(reason, message) for _, reason, message in events}
        assert ("Pending", f"members created; upgradeMode savepoint: the job was cancelled with snapshot {name}-g1;"
                           " the new spec starts from it") in said
        assert ("Pending", "members created; resuming: member 0 resumes the job from its last snapshot") in said
        assert any(reason == "Resumed" and message.startswith("job ") and " resumes from snapshot " in message
                   for reason, message in said), events
        await delete_jetjob(k8s, name)
    print("\n".join(seen))
    # Lost pods, an upgrade and suspensions are all expected here: warnings at most.
    assert [line for line in kubelet.logs().splitlines() if " ERROR " in line] == []


@dataclass
class Recovery:
    """Seconds from deleting a member pod until the job ran again and committed new output."""

    job_running: float
    """member 0's ``/job`` says RUNNING with one restart more (the job's own view)."""
    phase_running: float
    """the JetJob's status shows the restart and phase Running (what the user sees)."""
    first_output: float
    """a line more is committed to the sink than when the pod was deleted."""

    def __str__(self) -> str:
        return (f"job RUNNING again after {self.job_running:.2f} s (JetJob Running {self.phase_running:.2f} s),"
                f" first new committed output after {self.first_output:.2f} s")


async def lose_pod(k8s: Emulator, kubelet: Kubelet, name: str, pod: str, out: Path) -> Recovery:
    """Delete ``pod`` (the stand-in makes it again, as the StatefulSet would) and time the recovery."""
    token = base64.b64decode(get(k8s, "v1/secrets", f"{name}-token")["data"]["token"]).decode()
    job_url = kubelet.job_url(f"{name}-member")
    restarts = jetjob_status(k8s, name).get("restarts", 0)
    uid = get(k8s, PODS, pod)["metadata"]["uid"]
    committed_before = len(committed(out))
    started = time.monotonic()
    response = await k8s.delete(f"/api/v1/namespaces/default/pods/{pod}")
    assert response.status == 200

    def job_restarted() -> bool:
        report = fetch_job_report(job_url, 0.5, token)
        return report is not None and report.status == "RUNNING" and report.restarts > restarts

    await eventually(lambda: (get(k8s, PODS, pod) or {}).get("metadata", {}).get("uid") not in (None, uid),
                     30, what=f"{pod} made again")
    await eventually(job_restarted, 60, what="the job RUNNING again, restarted")
    job_running = time.monotonic() - started
    await eventually(lambda: jetjob_status(k8s, name).get("restarts", 0) > restarts
                     and jetjob_status(k8s, name).get("phase") == "Running", 60, what="the JetJob Running again")
    phase_running = time.monotonic() - started
    await eventually(lambda: len(committed(out)) > committed_before, 60, what="output after the restart")
    return Recovery(job_running, phase_running, time.monotonic() - started)
