"""This member process's load, as the cluster page shows it."""

from __future__ import annotations

import os
import resource
import time
from typing import Any

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Resident memory now (from ``/proc``; the peak from ``getrusage`` where there is none)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def process_load(running_executions: int) -> dict[str, Any]:
    """``{cpuSeconds, rssBytes, executions, wallSeconds}``: CPU time used by this process so far
    (user + system; the page turns two looks into a share of a core), its resident memory, the
    executions running on it and the wall clock of the reading."""
    return {"cpuSeconds": round(time.process_time(), 3), "rssBytes": rss_bytes(),
            "executions": running_executions, "wallSeconds": round(time.time(), 3)}
