"""A keyed distributed edge's routing of whole chunks: the sender's split by partition (memoized
partitions, C-level passes or the loop for many leaves, partition ids only where the other member
routes by them) and the receiver's handling of frames with or without ids, each compared with
the placement the documented partition oracle computes directly with ``mmh3``."""

from __future__ import annotations

import enum
import random
from collections import namedtuple

import pytest

from jet.cluster.edges.chunk_packets import encode_chunk
from jet.cluster.edges.distributed_plan import MAX_MASKED_LEAVES, DistributedPartitionedCollector, PartitionIdCollector
from jet.cluster.edges.flow_control import ReceiveWindow
from jet.cluster.edges.receiver import ReceiverTasklet
from jet.core import partitioner as partitioning
from jet.core.functions import whole_item
from jet.core.partitioner import DEFAULT_PARTITIONER, chunk_partitions_fn
from jet.execution.outbound import SingleTargetCollector
from jet.execution.queues import SpscQueue
from jet.pipeline.item_forms import key_of_pair
from tests import partition_oracle as oracle

Bid = namedtuple("Bid", "auction price")


class Colour(enum.IntEnum):
    RED = 1


class _Leaf:
    """Takes every chunk offered, keeping them in order."""

    def __init__(self) -> None:
        self.chunks: list[list] = []

    def offer_chunk(self, chunk: list) -> int:
        self.chunks.append(list(chunk))
        return len(chunk)

    def offer_special(self, item) -> bool:
        return True

    def items(self) -> list:
        return [item for chunk in self.chunks for item in chunk]


def test_chunk_partitions_are_each_keys_own_whatever_the_mix_of_key_types():
    partitions_of = chunk_partitions_fn(DEFAULT_PARTITIONER, distributed=True)
    chunks = [[1, "a", 1, "a", 2 ** 63 - 1, -2 ** 63], [True, 1, 1.0, Colour.RED, "a", 2.5],
              [1, 1, (1, "a"), None, b"a"], ["é", "\ud800", 2 ** 64, -2 ** 64], list(range(50)),
              [str(k) for k in range(50)] + list(range(50))]
    for keys in chunks * 2:  # the second time from the memo
        assert partitions_of(keys) == [oracle.partition_of(k) for k in keys], keys


def test_the_partition_memo_starts_again_past_its_limit_and_stays_right(monkeypatch):
    monkeypatch.setattr(partitioning, "PARTITION_MEMO_LIMIT", 10)
    partitions_of = chunk_partitions_fn(DEFAULT_PARTITIONER, distributed=True)
    rng = random.Random(5)
    for _ in range(20):
        keys = [rng.randrange(40) for _ in range(15)] + [str(rng.randrange(40))]
        assert partitions_of(keys) == [oracle.partition_of(k) for k in keys]
        assert len(partitions_of._memo) <= 10 + len(keys)


def test_the_memo_keeps_no_long_string_alive():
    partitions_of = chunk_partitions_fn(DEFAULT_PARTITIONER, distributed=True)
    long_keys = ["x" * 100 + str(k) for k in range(20)]
    assert partitions_of(long_keys) == [oracle.partition_of(k) for k in long_keys]
    assert partitions_of._memo == {}
    assert partitions_of(["short"]) == [oracle.partition_of("short")] and list(partitions_of._memo) == ["short"]


def _table(members: int, member: int, local_parallelism: int) -> tuple[list[int], int]:
    """The partition -> leaf table of member ``member``: its processors first, then one leaf per
    other member in index order (as the execution plan lays them out)."""
    others = [m for m in range(members) if m != member]
    table = []
    for partition in range(oracle.PARTITIONS):
        owner, processor = oracle.processor_on_distributed_edge(partition, members, local_parallelism)
        table.append(processor if owner == member else local_parallelism + others.index(owner))
    return table, local_parallelism


@pytest.mark.parametrize("members, local_parallelism", [(2, 1), (2, 2), (3, 1), (4, 3)],
                         ids=["2x1", "2x2", "3x1", "4x3-loop"])
@pytest.mark.parametrize("keying", ["pair-item", "whole-item", "function"])
def test_a_chunk_is_split_by_the_owner_of_each_keys_partition(members, local_parallelism, keying):
    rng = random.Random(members * 10 + local_parallelism)
    bids = [Bid(rng.randrange(300), rng.randrange(1000)) for _ in range(700)]
    if keying == "pair-item":
        chunk, key_fn, key_of = [(i, b) for i, b in enumerate(bids)], key_of_pair(_auction), lambda e: e[1].auction
    elif keying == "whole-item":
        chunk, key_fn, key_of = [b.auction for b in bids], whole_item, lambda e: e
    else:
        chunk, key_fn, key_of = bids, _auction, _auction
    table, remote_from = _table(members, 0, local_parallelism)
    leaves_count = remote_from + members - 1
    assert (leaves_count > MAX_MASKED_LEAVES) == (members == 4)
    for pairs in (True, False):
        leaves = [_Leaf() for _ in range(leaves_count)]
        collector = DistributedPartitionedCollector(leaves, key_fn, DEFAULT_PARTITIONER, table, remote_from,
                                                    remote_pairs=pairs)
        for start in range(0, len(chunk), 128):
            assert collector.offer_chunk(chunk[start:start + 128])
        expected: list[list] = [[] for _ in leaves]
        for entry in chunk:
            partition = oracle.partition_of(key_of(entry))
            leaf = table[partition]
            expected[leaf].append((entry, partition) if pairs and leaf >= remote_from else entry)
        assert [leaf.items() for leaf in leaves] == expected


def _auction(bid: Bid) -> int:
    return bid.auction


def test_a_chunk_of_one_owner_goes_whole_and_an_empty_one_nowhere():
    table, remote_from = _table(2, 0, 1)
    keys = [k for k in range(2000) if table[oracle.partition_of(k)] == 1][:64]
    leaves = [_Leaf(), _Leaf()]
    collector = DistributedPartitionedCollector(leaves, whole_item, DEFAULT_PARTITIONER, table, remote_from)
    assert collector.offer_chunk(keys) and collector.offer_chunk([])
    assert leaves[0].chunks == [] and leaves[1].chunks == [[(k, oracle.partition_of(k)) for k in keys]]


def test_a_single_processor_receiver_drops_partition_ids_a_sender_sent():
    queue = SpscQueue(1024, "to-sink")
    receiver = ReceiverTasklet("receiver", SingleTargetCollector([queue], 0), ReceiveWindow())
    receiver.enqueue(encode_chunk(7, 3, 0, [("a", 5), ("b", 9)], pairs=True))
    receiver.call()
    assert queue.poll() == ["a", "b"]


def test_a_receiver_routing_by_partition_hashes_items_that_came_without_ids():
    # the sender guessed one processor per member; this member runs two
    table, _ = _table(2, 1, 2)
    owned = {p: table[p] for p in range(oracle.PARTITIONS) if oracle.member_of(p, 2) == 1}
    queues = [SpscQueue(4096, f"p{j}") for j in range(2)]
    partitions_of = chunk_partitions_fn(DEFAULT_PARTITIONER, distributed=True)
    receiver = ReceiverTasklet("receiver", PartitionIdCollector(queues, owned), ReceiveWindow(),
                               partitions_of_items=partitions_of)
    keys = [k for k in range(3000) if oracle.member_of(oracle.partition_of(k), 2) == 1][:300]
    receiver.enqueue(encode_chunk(7, 3, 0, keys[:150]))
    receiver.enqueue(encode_chunk(7, 3, 0, [(k, oracle.partition_of(k)) for k in keys[150:]], pairs=True))
    receiver.call()
    received = [[item for chunk in iter(queue.poll, None) for item in chunk] for queue in queues]
    expected = [[k for k in keys if oracle.processor_on_distributed_edge(oracle.partition_of(k), 2, 2)[1] == j]
                for j in range(2)]
    assert received == expected and all(expected)
