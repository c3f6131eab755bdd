"""Garbage collection tuned for a long-running member process.

A stream moves short-lived tuples through a member at up to a million a second. CPython's
cyclic collector then runs often, and a full collection walks every tracked object of the
process: the imported modules, gRPC, cloudpickle, tens of thousands of objects that live as
long as the member. That walk took 15-30 ms of CPU on the benchmark machine, a pause far above
a stream's 10 ms latency budget, and it came back every few seconds.

``settle_member_heap`` is called once the member has started: it collects what start-up left
behind, then moves every surviving object into the permanent generation (``gc.freeze``), which
collections skip, so a full collection walks only what the jobs created. Frozen objects are
still freed by reference counting; only a cycle among them would outlive its use, and the
start-up heap is the member's for its whole life anyway. The young generation's threshold is
raised so that a chunk in flight (thousands of tuples alive for a few milliseconds) is not
collected, and promoted, several times on its way through the member.

Not for a user's process: ``jet.execution.execute`` leaves the caller's collector alone.

``return_freed_memory`` hands the pages a finished job freed back to the system (glibc's
``malloc_trim``). CPython frees a job's objects at once, but the C allocator keeps the memory
for reuse: a member that had just released a million-row result showed 510 MiB of RSS, 400 MiB
after the trim (``bench/repeated_jobs_bench.py``).
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time
from typing import Callable

#: Net new container objects before a young collection (CPython's default is 700).
YOUNG_GENERATION_THRESHOLD = 20_000


def settle_member_heap() -> None:
    """Collect, freeze what survives start-up, and make young collections rarer."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        # the symbols the interpreter is linked with: no ldconfig run as find_library would do
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_trim = _malloc_trim()


#: At most one trim per this many seconds: a trim walks the whole heap (0.3 ms on an idle
#: member, 10 ms after a large job), and a stream of tiny jobs frees little each.
MIN_TRIM_INTERVAL_S = 1.0
_last_trim = [-MIN_TRIM_INTERVAL_S]


def return_freed_memory() -> None:
    """Give the free pages of the C heap back to the system (a few ms; ctypes releases the GIL
    meanwhile), unless that was done less than :data:`MIN_TRIM_INTERVAL_S` ago. A no-op where
    the C library has no ``malloc_trim``."""
    now = time.monotonic()
    if _trim is not None and now - _last_trim[0] >= MIN_TRIM_INTERVAL_S:
        _last_trim[0] = now
        _trim(0)


def return_freed_memory_soon() -> None:
    """:func:`return_freed_memory` on a thread of its own, for a caller holding a lock."""
    if _trim is not None:
        threading.Thread(target=return_freed_memory, name="jet-trim", daemon=True).start()

