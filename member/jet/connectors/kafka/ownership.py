"""Which source processor reads which topic partition: Jet's ``StreamKafkaP`` rule.

The job decides, not a consumer group: partition ``p`` of the ``t``-th topic of the source goes
to the processor with global index ``(start(t) + p) % total parallelism``, where topics start at
evenly spread indices so that several topics with few partitions do not all land on processor
0. Every processor computes the same answer, so no coordination is needed, and a restore on
another parallelism gives each partition (and the offset saved for it) to its new owner.
"""

from __future__ import annotations


def owner_of(topic_index: int, topic_count: int, partition: int, total_parallelism: int) -> int:
    """The global processor index that reads ``partition`` of the ``topic_index``-th topic."""
    start = topic_index * max(1, total_parallelism // topic_count)
    return (start + partition) % total_parallelism


def owned_partitions(topics: list[str], partition_counts: dict[str, int], processor_index: int,
                     total_parallelism: int) -> list[tuple[str, int]]:
    """The (topic, partition) pairs ``processor_index`` owns, in topic then partition order."""
    return [(topic, partition) for topic_index, topic in enumerate(topics)
            for partition in range(partition_counts.get(topic, 0))
            if owner_of(topic_index, len(topics), partition, total_parallelism) == processor_index]
