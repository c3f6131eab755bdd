"""A streaming JetJob end to end (operator under Kopf, the API emulator, real member processes run
by the kubelet stand-in): it stays Running, its members log progress lines, it is suspended and
deleted like any job."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.operator.emulator import Emulator
from tests.operator.fakes import JETJOBS, PODS, STATEFULSETS, eventually, get, names
from tests.operator.kubelet import Kubelet
from tests.operator.test_end_to_end import kubelet, member_code, phases_seen, start_operator_for  # noqa: F401
from tests.operator.test_operator import COLLECTION, MERGE_PATCH, jetjob, wait_phase

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

#: A stream written as a core DAG: a source that never ends, on every member, into a noop sink.
TICKING_DAG = member_code("""
    import time

    from jet.core import DAG, Edge, Processor
    from jet.core.processors import noop_p


    class Ticks(Processor):
        def __init__(self):
            self.next = 0

        def complete(self):
            time.sleep(0.002)
            if self.outbox.offer(self.next):
                self.next += 1
            return False


    def dag():
        d = DAG()
        d.is_streaming = True
        source = d.new_vertex("ticks", Ticks, 1)
        sink = d.new_vertex("sink", noop_p(), 1)
        d.edge(Edge.between(source, sink).distributed())
        return d
""")

PROGRESS = re.compile(r"job \S+ on member (\d) progress sink: in=([\d,]+) out=0 rate=[\d,]+/s wm_lag=\S+( ms)? late=0")


def members_with_progress(logs: str) -> set[str]:
    """The members that logged a progress line of the sink with items in it."""
    return {m[1] for m in PROGRESS.finditer(logs) if int(m[2].replace(",", "")) > 0}


async def test_a_streaming_job_stays_running_logs_progress_and_is_suspended_and_deleted(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    document = jetjob("ticks", pipeline={"code": TICKING_DAG, "entrypoint": "dag"}, progressLogIntervalSeconds=1)
    with start_operator_for(kubelet, monkeypatch, "ticks"):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        running = await wait_phase(k8s, "Running", "ticks", timeout=45)
        assert running["membersReady"] == "2/2" and running["jobId"]
        # Several progress lines per member take several of the operator's status looks (0.3 s):
        # the job is still Running after all of them.
        await eventually(lambda: members_with_progress(kubelet.logs()) == {"0", "1"}, 30,
                         what="a progress line of the sink on both members")
        await eventually(lambda: len(PROGRESS.findall(kubelet.logs())) >= 6, 30, what="more progress lines")
        assert phases_seen(k8s, "ticks")[-1] == "Running", phases_seen(k8s, "ticks")
        assert "Completed" not in phases_seen(k8s, "ticks") and "Failed" not in phases_seen(k8s, "ticks")
        processes = kubelet.processes()
        assert len(processes) == 2 and all(p.poll() is None for p in processes)

        await k8s.patch(f"{COLLECTION}/ticks", json={"spec": {"suspend": True}}, headers=MERGE_PATCH)
        await wait_phase(k8s, "Suspended", "ticks", timeout=30)
        await eventually(lambda: get(k8s, STATEFULSETS, "ticks-member")["spec"]["replicas"] == 0,
                         what="members scaled to 0")
        await eventually(lambda: not names(k8s, PODS), 30, what="member pods deleted")
        await eventually(lambda: all(p.poll() is not None for p in processes), 15, what="members exited")

        response = await k8s.delete(f"{COLLECTION}/ticks")
        assert response.status == 200
        await eventually(lambda: get(k8s, JETJOBS, "ticks") is None, what="the JetJob gone")


WINDOW_LINE = re.compile(r"window \[(\d+), (\d+)\): (\d+) events")


async def test_the_example_streaming_jetjob_counts_windows_until_it_is_deleted(
        k8s: Emulator, kubelet: Kubelet, monkeypatch: pytest.MonkeyPatch) -> None:
    (document,) = [doc for doc in yaml.safe_load_all((EXAMPLES / "jetjob-stream.yaml").read_text())
                   if doc and doc["kind"] == "JetJob"]
    document["spec"]["progressLogIntervalSeconds"] = 1
    name = document["metadata"]["name"]
    with start_operator_for(kubelet, monkeypatch, name):
        response = await k8s.post(COLLECTION, json=document)
        assert response.status in (200, 201), await response.text()
        await wait_phase(k8s, "Running", name, timeout=45)
        await eventually(lambda: len(WINDOW_LINE.findall(kubelet.logs())) >= 4, 45, what="four window counts")
        await eventually(lambda: re.search(r"progress \S+: in=[\d,]+ out=[\d,]+ rate=", kubelet.logs()), 30,
                         what="progress lines")
        windows = WINDOW_LINE.findall(kubelet.logs())
        assert all(int(end) - int(start) == 1000 and int(start) % 1000 == 0 for start, end, _ in windows), windows
        rate = int(document["spec"]["pipeline"]["args"][0])
        # The stream's events are due at a fixed rate: a whole window holds a second's worth of them.
        # Each member's source starts at its own first call, some ms after the other's: when one
        # starts just before a second ends, the other starts in the next one, so the first two
        # windows may hold part of a second's events; every later window is whole.
        counts = [int(n) for _, _, n in windows]
        assert all(0 < n <= rate for n in counts[:2]), kubelet.logs()
        assert counts[2:] == [rate] * (len(counts) - 2), kubelet.logs()
        assert phases_seen(k8s, name)[-1] == "Running"
        processes = kubelet.processes()

        response = await k8s.delete(f"{COLLECTION}/{name}")
        assert response.status == 200
        await eventually(lambda: get(k8s, JETJOBS, name) is None, 30, what="the JetJob gone")
        await eventually(lambda: not names(k8s, PODS), 30, what="member pods deleted")
        await eventually(lambda: all(p.poll() is not None for p in processes), 15, what="members exited")
