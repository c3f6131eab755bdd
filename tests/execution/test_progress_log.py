"""A streaming job's progress log lets go of its job when stopped."""

import gc
import weakref

from jet.execution.progress_log import ProgressLog


class Execution:
    """Owns its progress log, which reads its figures: a reference cycle while the log runs."""

    def __init__(self) -> None:
        self.progress_log = ProgressLog("job", self.figures, 60_000).start()

    def figures(self) -> dict:
        return {}


def test_a_stopped_progress_log_no_longer_holds_its_execution():
    """The log held the execution's bound method, a cycle: every ended streaming job (its
    processors, results and queues) waited for a full collection."""
    gc.disable()  # only reference counting may free it
    try:
        execution = Execution()
        alive = weakref.ref(execution)
        execution.progress_log.stop()
        del execution
        assert alive() is None
    finally:
        gc.enable()
