"""Helpers of the member loss and rejoin tests: a local cluster with quick heartbeats, a job that
needs every member, and reading what the members logged."""

from __future__ import annotations

import re
from pathlib import Path

from jet.cluster.local.local_cluster import LocalCluster
from jet.core import DAG, Edge
from jet.core.functions import whole_item
from jet.core.processors import items_source_p

from tests import partition_oracle as oracle
from tests.cluster.cluster_support import deliveries, json_sink, wait_until

HEARTBEAT_INTERVAL_MS = 200
HEARTBEAT_TIMEOUT_MS = 1_500
ITEMS = list(range(900))
SINK_PARALLELISM = 2
REJOIN_WAIT_S = 60


def quick_cluster(log_dir: Path, members: int = 3, **settings) -> LocalCluster:
    """A local cluster whose members find a silent peer within 1.5 s."""
    return LocalCluster(members, log_dir=log_dir, heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                        heartbeat_timeout_ms=HEARTBEAT_TIMEOUT_MS, **settings)


def log_lines(cluster: LocalCluster, index: int, pattern: str) -> list[str]:
    """The lines of member ``index``'s log (every life of it) matching the regular expression."""
    return [line for line in cluster.log_paths[index].read_text(errors="replace").splitlines()
            if re.search(pattern, line)]


def wait_logged(cluster: LocalCluster, index: int, pattern: str, what: str, timeout_s: float = 30) -> list[str]:
    return wait_until(lambda: log_lines(cluster, index, pattern), timeout_s, what)


def wait_rejoined(cluster: LocalCluster, restarts: int) -> None:
    """Wait until the cluster has restarted ``restarts`` members in all and is whole again."""
    wait_until(lambda: cluster.member_restarts >= restarts, REJOIN_WAIT_S, f"{restarts} member restart(s)")
    wait_until(cluster.cluster_ready, REJOIN_WAIT_S, "the cluster to be whole again", interval_s=0.2)


def run_partitioned_job_on_every_member(cluster: LocalCluster, out_dir: Path) -> None:
    """A job over a distributed partitioned edge: each item must land on the processor the
    documented partitioning gives it, on each of the members (the oracle is plain Python)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(ITEMS), 1)
    sink = dag.new_vertex("sink", json_sink(out_dir), SINK_PARALLELISM)
    dag.edge(Edge.between(source, sink).distributed().partitioned(whole_item))
    cluster.new_job(dag).join(timeout=60)
    members = len(cluster.members)
    expected: dict = {(m, j): [] for m in range(members) for j in range(SINK_PARALLELISM)}
    for item in ITEMS:
        expected[oracle.processor_on_distributed_edge(oracle.partition_of(item), members, SINK_PARALLELISM)].append(item)
    got = deliveries(out_dir, "sink")
    assert {p: sorted(items) for p, items in got.items()} == expected
    assert all(expected.values()), "every processor of every member should own some of the items"
