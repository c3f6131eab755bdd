"""A member settles its heap once started: what survives start-up is frozen, young collections are rarer."""

import gc
import os
import platform
import subprocess
import sys
import weakref

import pytest

from jet.execution.gc_tuning import YOUNG_GENERATION_THRESHOLD, settle_member_heap


class Cycle:
    """An object that only the cyclic collector can free."""

    def __init__(self) -> None:
        self.me = self


def test_settling_freezes_the_live_heap_raises_the_young_threshold_and_still_collects_new_cycles():
    before = gc.get_threshold()
    try:
        survivor = [object()]
        settle_member_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, before[1], before[2])
        assert not any(o is survivor for o in gc.get_objects())  # frozen: no collection walks it
        garbage = Cycle()
        alive = weakref.ref(garbage)
        del garbage
        gc.collect()
        assert alive() is None  # a cycle made after settling is still freed
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


_FREED_IN_THE_HEAP = """
import sys
from jet.execution.gc_tuning import return_freed_memory

def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) // 1024

blocks = [bytes(100_000) for _ in range(3000)]  # ~300 MB in the C heap (under the mmap threshold)
sentinel = bytes(100_000)  # above them: the heap's top cannot shrink past it on its own
del blocks
freed = rss_mib()
return_freed_memory()
print(freed, rss_mib())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_returning_freed_memory_gives_the_pages_of_freed_objects_back_to_the_system():
    # in a process of its own: the test runner's heap is not this test's to trim
    run = subprocess.run([sys.executable, "-c", _FREED_IN_THE_HEAP], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=60)
    assert run.returncode == 0, run.stderr
    freed, trimmed = map(int, run.stdout.split())
    assert freed - trimmed > 150, f"RSS {freed} MiB after freeing 300 MB, {trimmed} MiB after the trim"
