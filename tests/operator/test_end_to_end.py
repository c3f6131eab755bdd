"""End to end: the operator under Kopf against the API emulator, with the member pods run as real
``jet member`` processes by the kubelet stand-in (``kubelet.py``), talking real gRPC to each
other, and the operator reading member 0's real ``GET /job``.

Members get their own network namespaces and pod DNS names where this machine allows it (root),
else their own loopback addresses; ``JET_E2E_LOOPBACK=1`` forces the loopback fallback.
"""

from __future__ import annotations

import collections
import json
import os
import re
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.operator.emulator import Emulator
from tests.operator.fakes import JETJOBS, PODS, STATEFULSETS, eventually, get, names
from tests.operator.kubelet import Kubelet
from tests.operator.test_operator import COLLECTION, event_reasons, jetjob, operator, status, wait_phase

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

WORD = re.compile(r"[a-z']+")
TEXT = """It was the best of times, it was the worst of times,
it was the age of wisdom, it was the age of foolishness,
it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness,
it was the spring of hope, it was the winter of despair.
"""


@pytest.fixture()
async def kubelet(k8s: Emulator) -> AsyncIterator[Kubelet]:
    """The kubelet stand-in on the emulator; every process and namespace is gone after the test."""
    use_netns = False if os.environ.get("JET_E2E_LOOPBACK") == "1" else None
    async with Kubelet(k8s, use_netns=use_netns) as stand_in:
        print(f"kubelet stand-in networking: {stand_in.networking}")
        try:
            yield stand_in
        finally:
            print(stand_in.logs())  # shown when the test fails
        assert not stand_in.errors, stand_in.errors


def start_operator_for(kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, job: str):
    """The operator, reading ``job``'s member 0 at the address the kubelet gives it."""
    monkeypatch.setenv("JET_OPERATOR_JOB_URL_TEMPLATE", kubelet.job_url(f"{job}-member"))
    return operator()


def phases_seen(k8s: Emulator, name: str) -> list[str]:
    """Every ``status.phase`` the JetJob had, in order, repeats collapsed (from its history)."""
    seen: list[str] = []
    for version in k8s.objects[JETJOBS, "default", name].history:
        phase = ((version or {}).get("status") or {}).get("phase")
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
    return seen


def in_order(seen: list[str], expected: list[str]) -> bool:
    """``expected`` is a subsequence of ``seen``."""
    remaining = iter(seen)
    return all(phase in remaining for phase in expected)


def member_code(body: str) -> str:
    return textwrap.dedent(body).lstrip()


def read_jsonl(directory: Path) -> list[Any]:
    return [json.loads(line) for path in sorted(directory.glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


async def wait_members_gone(k8s: Emulator, kubelet: Kubelet, processes: list, job: str) -> None:
    """Members scaled to 0: the pods are deleted and every process exited after SIGTERM."""
    await eventually(lambda: get(k8s, STATEFULSETS, f"{job}-member")["spec"]["replicas"] == 0,
                     what="members scaled to 0")
    await eventually(lambda: not names(k8s, PODS), what="member pods deleted")
    await eventually(lambda: all(p.poll() is not None for p in processes), 15, what="members exited")
    assert [p.returncode for p in processes] == [0] * len(processes), kubelet.logs()


async def test_wordcount_runs_pending_running_completed(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text_file = tmp_path / "in" / "text.txt"
    text_file.parent.mkdir()
    text_file.write_text(TEXT * 20)
    out = tmp_path / "out"
    gate = tmp_path / "go"
    code = member_code(f"""
        import os
        import re
        import time

        from jet import AggregateOperations, Pipeline, Sinks, Sources

        WORD = re.compile(r"[a-z']+")


        def after_the_gate(line):
            # The job stays RUNNING until the test has seen it so (or a minute has passed).
            deadline = time.monotonic() + 60
            while not os.path.exists({str(gate)!r}) and time.monotonic() < deadline:
                time.sleep(0.05)
            return line


        def pipeline():
            p = Pipeline.create()
            (p.read_from(Sources.files({str(text_file)!r}))
              .map(after_the_gate)
              .flat_map(lambda line: WORD.findall(line.lower()))
              .grouping_key(lambda word: word)
              .aggregate(AggregateOperations.counting())
              .write_to(Sinks.jsonl({str(out)!r})))
            return p
    """)
    with start_operator_for(kubelet, monkeypatch, "wc"):
        response = await k8s.post(COLLECTION, json=jetjob("wc", pipeline={"code": code}, ttlSecondsAfterFinished=3))
        assert response.status in (200, 201), await response.text()
        running = await wait_phase(k8s, "Running", timeout=45)
        assert running["membersReady"] == "2/2" and running["jobId"]
        processes = kubelet.processes()
        assert len(processes) == 2 and all(p.poll() is None for p in processes)
        assert not out.exists() or not read_jsonl(out)
        gate.touch()
        completed = await wait_phase(k8s, "Completed", timeout=30)
        assert completed["message"] == "the job completed", completed
        assert in_order(phases_seen(k8s, "wc"), ["Pending", "Running", "Completed"]), phases_seen(k8s, "wc")

        counts = {word: count for word, count in read_jsonl(out)}
        expected = collections.Counter(WORD.findall((TEXT * 20).lower()))
        assert counts == dict(expected), kubelet.logs()
        # Finished, the members stay for spec.ttlSecondsAfterFinished: their logs can be read and
        # member 0 still reports the job.
        assert completed["membersUntil"] and completed["result"]["status"] == "COMPLETED", completed
        assert completed["result"]["jobId"] == running["jobId"]
        assert all(p.poll() is None for p in processes) and len(names(k8s, PODS)) == 2
        await wait_members_gone(k8s, kubelet, processes, "wc")
        assert status(k8s, "wc")["result"] == completed["result"]

        response = await k8s.delete(f"{COLLECTION}/wc")
        assert response.status == 200
        await eventually(lambda: get(k8s, JETJOBS, "wc") is None, what="the JetJob gone")
        for resource, name in [(STATEFULSETS, "wc-member"), ("v1/services", "wc-member"),
                               ("v1/secrets", "wc-token"), ("v1/configmaps", "wc-config"),
                               ("v1/configmaps", "wc-pipeline")]:
            await eventually(lambda: get(k8s, resource, name) is None, 5, what=f"{resource} {name} gone")


async def test_pipeline_error_fails_the_job_with_the_users_error(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rows = tmp_path / "rows.txt"
    rows.write_text("".join(f"row {i}\n" for i in range(20)))
    code = member_code(f"""
        from jet import Pipeline, Sinks, Sources


        def parse_row(line):
            if line == "row 7":
                raise ValueError("bad row 7")
            return line


        def pipeline():
            p = Pipeline.create()
            p.read_from(Sources.files({str(rows)!r})).map(parse_row).write_to(Sinks.noop())
            return p
    """)
    with start_operator_for(kubelet, monkeypatch, "bad"):
        response = await k8s.post(COLLECTION, json=jetjob("bad", pipeline={"code": code}, ttlSecondsAfterFinished=0))
        assert response.status in (200, 201), await response.text()
        await eventually(lambda: len(kubelet.processes()) == 2, 20, what="two member processes")
        processes = kubelet.processes()
        failed = await wait_phase(k8s, "Failed", "bad", timeout=45)
        message = failed["message"]
        assert message.startswith("the job failed:"), message
        assert "ValueError: bad row 7" in message and "in parse_row" in message, message
        assert failed["restartCount"] == 0 and "restartAt" not in failed
        assert "ValueError: bad row 7" in failed["result"]["message"], failed["result"]
        assert "\n" not in failed["result"]["message"]
        assert in_order(phases_seen(k8s, "bad"), ["Pending", "Failed"]), phases_seen(k8s, "bad")
        warnings = await eventually(
            lambda: [e for e in event_reasons(k8s, "bad") if e[0] == "Warning" and e[1] == "Failed"],
            what="a Warning event")
        assert any("bad row 7" in text for _, _, text in warnings), warnings
        await wait_members_gone(k8s, kubelet, processes, "bad")
        assert status(k8s, "bad")["phase"] == "Failed"


async def test_crashing_member_fails_the_job_with_crash_loop_back_off(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch) -> None:
    code = member_code("""
        def pipeline():
            import os, sys
            print("no pipeline today", file=sys.stderr, flush=True)
            os._exit(1)  # the member process dies (an error raised here is reported on /job)
    """)
    with start_operator_for(kubelet, monkeypatch, "crash"):
        response = await k8s.post(COLLECTION, json=jetjob("crash", pipeline={"code": code}, ttlSecondsAfterFinished=0))
        assert response.status in (200, 201), await response.text()
        failed = await wait_phase(k8s, "Failed", "crash", timeout=45)
        assert "pod crash-member-0: CrashLoopBackOff" in failed["message"], failed["message"]
        containers = [status["containerStatuses"][0]
                      for version in k8s.objects[PODS, "default", "crash-member-0"].history
                      if (status := (version or {}).get("status") or {}).get("containerStatuses")]
        crashed = [c for c in containers if "CrashLoopBackOff" in str(c["state"])]
        assert crashed and crashed[0]["restartCount"] == 2, containers
        assert crashed[0]["lastState"]["terminated"]["exitCode"] == 1
        assert "no pipeline today" in kubelet.logs()
        await eventually(lambda: not names(k8s, PODS), what="member pods deleted")
        assert not kubelet.processes()
