"""A snapshot holds each processor's state as it was at the barrier, though processors offer their
live state without copying it and go on changing it in place (a rolling sum's cell, ``to_list``
accumulators of co-grouped windows and sessions): the tasklet pickles what was offered before the
processor runs again.

Each processor saves through a real tasklet and ``SnapshotContext``, whose writer thread is held
until the processor has taken more items; what it writes is compared with plain Python over the
items before the barrier."""

import threading
from collections import defaultdict

import pytest

from jet.core.co_aggregate import co_aggregate
from jet.core.inbox import Inbox
from jet.core.outbox import SNAPSHOT_PORTION
from jet.core.partitioner import murmur_partition
from jet.core.processor import Context
from jet.core.processors import transform_stateful_p
from jet.core.processors.co_group import co_accumulate_by_frame_p, co_aggregate_to_session_window_p
from jet.core.sliding_window_policy import tumbling_win_policy
from jet.core.snapshot_keys import BroadcastKey
from jet.execution.processor_tasklet import ProcessorTasklet
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_portions import chunk_pickles
from jet.job_config import ProcessingGuarantee

from tests.execution.support import call_until_saved
from jet.pipeline.aggregate_operations import AggregateOperations

KEYS = 3 * SNAPSHOT_PORTION  # a save of several calls
FRAME = 100
LISTS = co_aggregate((AggregateOperations.to_list(), AggregateOperations.to_list()))


def _key(item):
    return item[0]


def _add(state, key, item):
    state[0] += item[1]
    return state[0]


def _feed(processor, items, ordinal=0) -> None:
    inbox = Inbox()
    inbox.add_chunk(list(items))
    while not inbox.is_empty():
        processor.process(ordinal, inbox)


def _saved_while_changing(processor, before: list, after: list) -> dict:
    """The keyed entries a tasklet of ``processor`` wrote for a snapshot taken after the
    ``(ordinal, items)`` of ``before``; the items of ``after`` reach the processor before the
    writer thread may write."""
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, name="member 0")
    # keys split over the partition groups, so most groups pickle their last entries when the save ends
    tasklet = ProcessorTasklet("state#0", processor, Context(vertex_name="state"), [], [], [], context,
                               snapshot_partition=murmur_partition)
    tasklet.init()
    for ordinal, items in before:
        _feed(processor, items, ordinal)
    may_write, written = threading.Event(), []

    def write(vertex, sequence, data, group):
        assert may_write.wait(30)
        written.append(data)
        return len(data)

    phase1 = context.start_phase1(0, False, write)
    assert call_until_saved(tasklet) > 2  # the save took several calls
    for ordinal, items in after:
        _feed(processor, items, ordinal)
    may_write.set()
    phase1.result(timeout=30)
    context.execution_ended(None)
    entries = [entry for data in written for _, part in chunk_pickles(data) for entry in part]
    return {key: value for key, value in entries if type(key) is not BroadcastKey}


def test_a_stateful_mapping_saves_its_sums_as_they_were_at_the_barrier():
    before = [(1, (key, key + 1)) for key in range(KEYS)]
    after = [(2, (key, 1000)) for key in range(KEYS)]
    processor = transform_stateful_p("map", _key, 0, lambda: [0], _add)()
    saved = _saved_while_changing(processor, [(0, before)], [(0, after)])
    assert saved == {key: (1, [key + 1]) for key in range(KEYS)}


@pytest.mark.parametrize("supplier", [co_accumulate_by_frame_p((_key, _key), tumbling_win_policy(FRAME), LISTS),
                                      co_aggregate_to_session_window_p(FRAME, (_key, _key), LISTS)],
                         ids=["co-grouped frames", "co-grouped sessions"])
def test_co_grouped_lists_are_saved_as_they_were_at_the_barrier(supplier):
    left = [(10, (key, "l")) for key in range(KEYS)]
    right = [(20, (key, "r")) for key in range(0, KEYS, 2)]
    later = [(30, (key, "later")) for key in range(KEYS)]
    saved = _saved_while_changing(supplier(), [(0, left), (1, right)], [(0, later), (1, later)])
    expected = defaultdict(lambda: [[], []])
    for ordinal, items in enumerate((left, right)):
        for _, item in items:
            expected[item[0]][ordinal].append(item)
    assert saved.keys() == expected.keys()
    for key, lists in expected.items():
        value = saved[key]
        if isinstance(value, dict):  # frames: {frame end: accumulator}
            assert value == {FRAME: lists}, key
        else:  # sessions: [(start, end, accumulator)]
            assert [acc for _, _, acc in value] == [lists], key
