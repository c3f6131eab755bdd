"""Every routing policy over a distributed edge, across 2 and 3 real member processes."""

import pytest

from jet.core import DAG, Edge
from jet.core.functions import whole_item
from jet.core.processors import items_source_p, map_p
from tests import partition_oracle as oracle
from tests.cluster.cluster_support import deliveries, json_sink

ITEMS = list(range(600))
SINK_PARALLELISM = 2


def run_edge(cluster, tmp_path, shape_edge, sink_parallelism=SINK_PARALLELISM):
    """source (LP 1 per member) -> distributed edge -> sink (LP 2 per member)."""
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(ITEMS), 1)
    sink = dag.new_vertex("sink", json_sink(tmp_path), sink_parallelism)
    dag.edge(shape_edge(Edge.between(source, sink)).distributed())
    cluster.new_job(dag).join(timeout=30)
    got = deliveries(tmp_path, "sink")
    members = len(cluster.members)
    assert set(got) == {(m, j) for m in range(members) for j in range(sink_parallelism)}
    return got


@pytest.fixture(params=[2, 3], ids=["2-members", "3-members"])
def cluster(request, cluster2, cluster3):
    return cluster2 if request.param == 2 else cluster3


def test_unicast_delivers_every_item_once_and_every_member_gets_a_share(cluster, tmp_path):
    got = run_edge(cluster, tmp_path, lambda e: e.unicast())
    assert sorted(x for items in got.values() for x in items) == ITEMS
    for member in range(len(cluster.members)):
        assert sum(len(got[(member, j)]) for j in range(SINK_PARALLELISM)) > 0, f"member {member} got nothing"


def test_broadcast_gives_every_processor_in_the_cluster_every_item_once(cluster, tmp_path):
    got = run_edge(cluster, tmp_path, lambda e: e.broadcast())
    for processor, items in got.items():
        assert sorted(items) == ITEMS, f"processor {processor}"


def test_partitioned_lands_each_item_on_the_owner_of_its_partition(cluster, tmp_path):
    got = run_edge(cluster, tmp_path, lambda e: e.partitioned(whole_item))
    members = len(cluster.members)
    expected: dict = {processor: [] for processor in got}
    for item in ITEMS:
        partition = oracle.partition_of(item)
        expected[oracle.processor_on_distributed_edge(partition, members, SINK_PARALLELISM)].append(item)
    assert {p: sorted(items) for p, items in got.items()} == expected
    assert all(expected.values()), "every processor should own some of 600 keys"


def test_partitioned_to_one_processor_a_member_lands_each_item_on_its_partitions_owner(cluster, tmp_path):
    # items then cross without their partition ids: the receiving member has nothing to route
    got = run_edge(cluster, tmp_path, lambda e: e.partitioned(str), sink_parallelism=1)
    members = len(cluster.members)
    expected = {(m, 0): sorted(i for i in ITEMS if oracle.member_of(oracle.partition_of(str(i)), members) == m)
                for m in range(members)}
    assert {p: sorted(items) for p, items in got.items()} == expected
    assert all(expected.values())


def test_all_to_one_sends_everything_to_exactly_one_processor_in_the_cluster(cluster, tmp_path):
    got = run_edge(cluster, tmp_path, lambda e: e.all_to_one("the-key"))
    receivers = [p for p, items in got.items() if items]
    assert len(receivers) == 1, f"processors that received items: {receivers}"
    assert sorted(got[receivers[0]]) == ITEMS
    partition = oracle.partition_of("the-key")
    assert receivers[0] == oracle.processor_on_distributed_edge(partition, len(cluster.members), SINK_PARALLELISM)


def test_a_chain_of_distributed_stages_keeps_every_item(cluster, tmp_path):
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(ITEMS), 1)
    double = dag.new_vertex("double", map_p(lambda x: 2 * x), 2)
    sink = dag.new_vertex("sink", json_sink(tmp_path), 1)
    dag.edge(Edge.between(source, double).partitioned(whole_item).distributed())
    dag.edge(Edge.between(double, sink).all_to_one("sink").distributed())
    cluster.new_job(dag).join(timeout=30)
    got = deliveries(tmp_path, "sink")
    assert sorted(x for items in got.values() for x in items) == [2 * x for x in ITEMS]
