"""Processors shared by the execution tests."""

import threading
import time
from collections import defaultdict

from jet.core import Processor


class RecordingSink(Processor):
    """Records (ordinal, item) per local processor index, in arrival order."""

    def __init__(self, record):
        self._record = record

    def process(self, ordinal, inbox):
        self._record[self.context.local_index].extend((ordinal, x) for x in inbox.take_chunk())


def recording_sink():
    record = defaultdict(list)
    return record, lambda: RecordingSink(record)


def items_of(record, index):
    return [item for _, item in record[index]]


class ThreadRecorder(Processor):
    """Notes which threads called it."""

    def __init__(self, threads, cooperative=True):
        self._threads = threads
        self.is_cooperative = cooperative

    def process(self, ordinal, inbox):
        self._threads.add(threading.current_thread().name)
        inbox.clear()

    def complete(self):
        self._threads.add(threading.current_thread().name)
        return True


def wait_until(condition, timeout=20.0):
    """Poll ``condition`` until true; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.001)


def call_until_saved(tasklet) -> int:
    """Call a tasklet whose snapshot's phase 1 has started until its save is over; the calls."""
    from jet.execution.processor_tasklet import ProcessorState
    calls = 0
    while tasklet.saved_snapshot_id < 0 or tasklet.state is ProcessorState.SAVE_SNAPSHOT:
        tasklet.call()
        calls += 1
    return calls
