"""A processor whose save reports done after ``offer_to_snapshot`` refused an entry fails its job
naming itself, instead of leaving the entry out of the snapshot; one that offers again saves all."""

import pytest

from jet.core.outbox import SNAPSHOT_PORTION
from jet.core.processor import Context, Processor
from jet.core.processors.snapshot_state import SnapshotSaver
from jet.execution.processor_tasklet import ProcessorState, ProcessorTasklet
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_portions import chunk_pickles
from jet.job_config import ProcessingGuarantee

ENTRIES = 2 * SNAPSHOT_PORTION + 7


class IgnoresRefusals(Processor):
    def save_to_snapshot(self) -> bool:
        for i in range(ENTRIES):
            self.outbox.offer_to_snapshot(("k", i), i)
        return True


class OffersAgain(Processor):
    def __init__(self) -> None:
        self._saver = SnapshotSaver()

    def save_to_snapshot(self) -> bool:
        return self._saver.offer(self.outbox, lambda: ((("k", i), i) for i in range(ENTRIES)))


def _save(processor: Processor) -> list:
    """The entries a tasklet of ``processor`` wrote into a snapshot taken between two calls."""
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, name="member 0")
    tasklet = ProcessorTasklet("saver#0", processor, Context(vertex_name="saver"), [], [], [], context)
    tasklet.init()
    written: list = []

    def write(vertex, sequence, data, group):
        written.append(data)
        return len(data)

    phase1 = context.start_phase1(0, False, write)
    for _ in range(1000):
        if tasklet.saved_snapshot_id >= 0 and tasklet.state is not ProcessorState.SAVE_SNAPSHOT:
            break
        tasklet.call()
    phase1.result(timeout=30)
    context.execution_ended(None)
    return [entry for data in written for _, entries in chunk_pickles(data) for entry in entries]


def test_a_save_done_after_a_refused_offer_fails_naming_the_vertex_and_the_method():
    with pytest.raises(RuntimeError, match=r"vertex 'saver': IgnoresRefusals.save_to_snapshot\(\) returned True"
                                           r" after offer_to_snapshot\(\) refused an entry"):
        _save(IgnoresRefusals())


def test_a_save_that_offers_again_after_a_refusal_writes_every_entry():
    saved = _save(OffersAgain())
    assert sorted(value for key, value in saved if type(key) is tuple) == list(range(ENTRIES))
