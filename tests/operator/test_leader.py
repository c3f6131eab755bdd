"""Leader election over a Lease: the rules (pure), two electors against the API emulator, and
the operator under Kopf waiting for the lead before it handles any JetJob."""

from __future__ import annotations

import asyncio
import datetime
import socket
import urllib.request

import pytest

from jet_operator.kube import KubeApi, load_client_configuration
from jet_operator.leader import LeaderElector, lease_spec, may_hold, micro_time
from tests.operator.emulator import Emulator
from tests.operator.fakes import STATEFULSETS, eventually, get
from tests.operator.test_operator import COLLECTION, delete_jetjob, jetjob, operator

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
LEASES = "coordination.k8s.io/v1/leases"


def _lease(holder: str, renewed_seconds_ago: float, duration: int = 15, transitions: int = 0) -> dict:
    renewed = NOW - datetime.timedelta(seconds=renewed_seconds_ago)
    return {"metadata": {"name": "jet-operator", "resourceVersion": "7"},
            "spec": {"holderIdentity": holder, "renewTime": micro_time(renewed),
                     "leaseDurationSeconds": duration, "leaseTransitions": transitions}}


def test_who_may_hold_the_lease() -> None:
    assert may_hold(None, "a", NOW)
    assert may_hold(_lease("a", 1), "a", NOW)  # its own: renew
    assert not may_hold(_lease("b", 14), "a", NOW)  # another's, still fresh
    assert may_hold(_lease("b", 16), "a", NOW)  # another's, expired
    assert may_hold(_lease("", 1), "a", NOW)  # released


def test_taking_over_counts_a_transition_and_renewing_does_not() -> None:
    assert lease_spec(None, "a", NOW, 15) == {
        "holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-02T03:04:05.000000Z",
        "acquireTime": "2026-01-02T03:04:05.000000Z", "leaseTransitions": 0}
    renewed = lease_spec(_lease("a", 3, transitions=2), "a", NOW, 15)
    assert renewed["leaseTransitions"] == 2 and "acquireTime" not in renewed
    assert lease_spec(_lease("b", 30, transitions=2), "a", NOW, 15)["leaseTransitions"] == 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthz(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:  # noqa: S310
        return response.status


def _elector(identity: str, **timing: float) -> LeaderElector:
    api = KubeApi(load_client_configuration(), 5)
    return LeaderElector(api, "default", "jet-operator", identity, **{
        "lease_seconds": 1, "renew_deadline_seconds": 0.6, "retry_seconds": 0.1, **timing})


async def test_one_elector_leads_another_takes_over_when_it_stops_renewing(k8s: Emulator) -> None:
    a, b = _elector("a"), _elector("b")
    assert await asyncio.to_thread(a.try_hold)
    assert not await asyncio.to_thread(b.try_hold)
    assert await asyncio.to_thread(a.try_hold)  # renewing
    assert get(k8s, LEASES, "jet-operator")["spec"]["holderIdentity"] == "a"
    await asyncio.sleep(1.2)  # a stops renewing: its lease expires
    assert await asyncio.to_thread(b.try_hold)
    assert not await asyncio.to_thread(a.try_hold)
    spec = get(k8s, LEASES, "jet-operator")["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    await asyncio.to_thread(b.release)  # a stopping operator gives it up: no wait for the expiry
    assert await asyncio.to_thread(a.try_hold)


async def test_a_leader_that_cannot_renew_stops(k8s: Emulator) -> None:
    a = _elector("a")
    assert await asyncio.to_thread(a.try_hold)
    lost = asyncio.Event()
    renewal = asyncio.create_task(a.renew(on_lost=lost.set))
    # Someone else writes itself in with a long lease (as a replica that thought a had expired).
    k8s.objects[LEASES, "default", "jet-operator"].patch(
        {"spec": {"holderIdentity": "c", "renewTime": micro_time(datetime.datetime.now(datetime.timezone.utc)),
                  "leaseDurationSeconds": 60}})
    await asyncio.wait_for(lost.wait(), 5)
    await renewal  # it ends once it has said so
    await asyncio.to_thread(a.release)
    assert get(k8s, LEASES, "jet-operator")["spec"]["holderIdentity"] == "c"  # not ours to release


async def test_the_operator_waits_for_the_lead_before_it_handles_jetjobs(
        k8s: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JET_OPERATOR_LEADER_ELECTION", "true")
    monkeypatch.setenv("JET_OPERATOR_LEADER_ELECTION_LEASE_SECONDS", "2")
    monkeypatch.setenv("JET_OPERATOR_LEADER_ELECTION_RETRY_SECONDS", "0.2")
    # Its Lease calls time out after 0.4 s (two retries): stopping, it cannot reach the emulator
    # (this test blocks while the runner stops), so it cannot give the lead up here (tested
    # above); a long renew deadline keeps it from taking that for a lost lead, which would stop
    # the process (this one: pytest's).
    monkeypatch.setenv("JET_OPERATOR_LEADER_ELECTION_RENEW_DEADLINE_SECONDS", "60")
    monkeypatch.setenv("POD_NAME", "jet-operator-7d9f-b")
    port = _free_port()
    monkeypatch.setenv("JET_OPERATOR_LEADER_ELECTION_WAITING_HEALTH_PORT", str(port))
    other = _elector("jet-operator-7d9f-a", lease_seconds=2)
    assert await asyncio.to_thread(other.try_hold)
    with operator() as runner:
        await k8s.post(COLLECTION, json=jetjob())
        for _ in range(10):  # the other replica leads for 2 s more: nothing is handled meanwhile
            assert await asyncio.to_thread(other.try_hold)
            await asyncio.sleep(0.1)
        assert get(k8s, STATEFULSETS, "wc-member") is None
        # Waiting, it answers its liveness probe (Kopf serves it only after its startup).
        assert await asyncio.to_thread(_healthz, port) == 200
        # The other replica is gone without a word: its Lease expires, this one takes the lead.
        await eventually(lambda: get(k8s, STATEFULSETS, "wc-member"), 10, what="the StatefulSet")
        with pytest.raises(OSError):  # the port is free for Kopf's own liveness endpoint
            await asyncio.to_thread(_healthz, port)
        spec = get(k8s, LEASES, "jet-operator")["spec"]
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("jet-operator-7d9f-b", 1)
        await delete_jetjob(k8s, "wc")
    assert "Waiting for the lead: Lease default/jet-operator is held by jet-operator-7d9f-a" in runner.output
    assert "Leading as jet-operator-7d9f-b" in runner.output
