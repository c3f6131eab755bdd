"""A live member's /metrics (real HTTP) during a running streaming job has every family of the
metrics contract, with the labels the contract names."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import jet
from jet.core import DAG, Edge
from jet.core.processors import map_p, noop_p
from tests.cluster.cluster_support import endless_source, wait_until

PROCESSOR_LABELS = {"job", "job_name", "execution", "vertex", "processor", "member"}
ORDINAL_LABELS = PROCESSOR_LABELS | {"ordinal", "to_vertex"}
DISTRIBUTED_LABELS = {"job", "job_name", "execution", "vertex", "ordinal", "to_vertex", "member", "remote_member"}

#: The contract's families, written out here (not taken from the code under test).
CONTRACT = {
    **{f"jet_vertex_{name}": PROCESSOR_LABELS for name in (
        "receivedCount", "emittedCount", "topObservedWm", "coalescedWm", "lastForwardedWm",
        "lastForwardedWmLatency", "lateEventsDropped", "receivedBatches", "queuesSize", "queuesCapacity",
        "snapshotBytes", "snapshotKeys", "backPressuredTimeMs")},
    "jet_edge_backPressuredTimeMs": ORDINAL_LABELS,
    "jet_edge_emittedCount": ORDINAL_LABELS,
    **{f"jet_edge_{name}": DISTRIBUTED_LABELS for name in (
        "distributedBytesOut", "distributedPacketsOut", "distributedItemsOut", "distributedBytesIn",
        "distributedPacketsIn", "distributedItemsIn", "receiveWindow")},
}


def streaming_dag() -> DAG:
    dag = DAG()
    dag.is_streaming = True
    ticks = dag.new_vertex("ticks", endless_source(), 1)
    double = dag.new_vertex("double", map_p(lambda x: 2 * x), 1)
    sink = dag.new_vertex("sink", noop_p(), 1)
    dag.edge(Edge.between(ticks, double).distributed())
    dag.edge(Edge.between(double, sink))
    return dag


def scrape(port: int) -> dict[str, list]:
    """Family name -> its samples, as Prometheus's own parser reads the page."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:  # noqa: S310
        text = response.read().decode()
    families: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        families.setdefault(family.name, []).extend(family.samples)
    return families


def received_from_the_other_member(port: int) -> dict[str, list] | None:
    families = scrape(port)
    samples = families.get("jet_edge_distributedItemsIn", [])
    return families if any(sample.value > 0 for sample in samples) else None


@pytest.mark.timeout(120)
def test_a_running_jobs_scrape_has_every_family_of_the_contract_with_its_labels():
    with jet.local_cluster(members=2) as cluster:
        job = cluster.new_job(streaming_dag(), {"name": "ticking"})
        families = wait_until(lambda: received_from_the_other_member(cluster.http_ports[0]),
                              what="items received over the distributed edge on member 0")
        for name, labels in CONTRACT.items():
            samples = families.get(name)
            assert samples, f"{name} is missing from the scrape"
            for sample in samples:
                assert set(sample.labels) == labels, (name, sample.labels)
                assert sample.labels["job"] == job.id and sample.labels["job_name"] == "ticking"
                assert sample.labels["member"] == "0"
        edges = {(s.labels["vertex"], s.labels["to_vertex"], s.labels["remote_member"])
                 for s in families["jet_edge_distributedItemsOut"]}
        assert edges == {("ticks", "double", "1")}
        assert {s.labels["vertex"] for s in families["jet_vertex_receivedCount"]} == {"ticks", "double", "sink"}
        capacity = {s.labels["vertex"]: s.value for s in families["jet_vertex_queuesCapacity"]}
        assert capacity["ticks"] == 0 and capacity["double"] > 0  # a source has no inbound queue
        assert all(s.value > 0 for s in families["jet_edge_receiveWindow"])
        job.cancel()
