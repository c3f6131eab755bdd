from collections import Counter

from jet.core import DAG, HASH_PARTITIONER, Edge, EdgeConfig
from jet.core.processors import items_source_p
from jet.execution import execute

from tests import partition_oracle as oracle
from tests.core.key_strategies import Badge
from tests.execution.support import items_of, recording_sink

N = 4000


def _run(edge_setup, up=1, down=4, items=range(N), config=None):
    record, sink = recording_sink()
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(list(items)), up)
    target = dag.new_vertex("sink", sink, down)
    edge = edge_setup(Edge.between(source, target))
    if config:
        edge.set_config(config)
    dag.edge(edge)
    execute(dag, cooperative_threads=1, timeout=30)
    return record


def test_unicast_spreads_single_item_chunks_round_robin_exactly():
    config = EdgeConfig(outbox_capacity=1, queue_size=N)
    record = _run(lambda e: e.unicast(), config=config)
    assert [len(record[j]) for j in range(4)] == [N // 4] * 4
    assert sorted(x for j in range(4) for x in items_of(record, j)) == list(range(N))


def test_unicast_delivers_every_item_once_with_default_chunks():
    record = _run(lambda e: e)
    assert sorted(x for j in record for x in items_of(record, j)) == list(range(N))


def test_isolated_connects_fixed_pipes():
    # upstream 2 -> downstream 4: downstream j reads upstream j % 2 (even items come from 0)
    record = _run(lambda e: e.isolated(), up=2, down=4)
    assert all(x % 2 == 0 for j in (0, 2) for x in items_of(record, j))
    assert all(x % 2 == 1 for j in (1, 3) for x in items_of(record, j))
    assert sorted(x for j in range(4) for x in items_of(record, j)) == list(range(N))
    # upstream 4 -> downstream 2: upstream i writes downstream i % 2
    record = _run(lambda e: e.isolated(), up=4, down=2)
    assert sorted(items_of(record, 0)) == [x for x in range(N) if x % 4 in (0, 2)]
    assert sorted(items_of(record, 1)) == [x for x in range(N) if x % 4 in (1, 3)]
    # equal parallelism keeps each pipe's order
    record = _run(lambda e: e.isolated(), up=3, down=3)
    for j in range(3):
        assert items_of(record, j) == list(range(j, N, 3))


def test_broadcast_delivers_every_item_to_every_processor_exactly_once():
    record = _run(lambda e: e.broadcast(), up=2, down=3)
    for j in range(3):
        assert sorted(items_of(record, j)) == list(range(N))


def test_partitioned_sends_each_key_to_its_partition_owner():
    words = [f"w{i % 97}" for i in range(N)]
    record = _run(lambda e: e.partitioned(lambda w: w), up=2, down=4, items=words)
    expected = {j: Counter() for j in range(4)}
    for word in words:
        expected[oracle.processor_on_local_edge(oracle.partition_of(word), 4)][word] += 1
    assert {j: Counter(items_of(record, j)) for j in range(4)} == expected
    assert all(expected.values()), "97 keys should reach every processor"


def test_partitioned_with_the_hash_partitioner_on_a_local_edge():
    words = [f"w{i % 97}" for i in range(N)]
    record = _run(lambda e: e.partitioned(lambda w: w, HASH_PARTITIONER), down=3, items=words)
    for j in range(3):
        assert all(hash(w) % 271 % 3 == j for w in items_of(record, j))
    assert sum(len(record[j]) for j in range(3)) == N


def test_all_to_one_sends_everything_to_one_processor():
    record = _run(lambda e: e.all_to_one("the-key"), up=2, down=4)
    target = oracle.processor_on_local_edge(oracle.partition_of("the-key"), 4)
    assert sorted(items_of(record, target)) == list(range(N))
    assert all(not record[j] for j in range(4) if j != target)


def test_a_local_partitioned_edge_places_keys_without_an_encoding_by_their_hash():
    badges = [Badge(f"b{i % 31}") for i in range(N)]
    record = _run(lambda e: e.partitioned(lambda b: b), up=2, down=3, items=badges)
    for j in range(3):
        assert all(hash(b) % 271 % 3 == j for b in items_of(record, j))
    assert sum(len(record[j]) for j in range(3)) == N
