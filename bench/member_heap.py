"""What a member process holds, asked by a job: ``heap_stats_pipeline()`` makes every member
report its RSS, its collector's counters and the Python objects the collector tracks by type
(the frozen start-up heap, ``gc.freeze``, is not among them), and what grew since it was last
asked. The job's own few objects are in the counts too, the same each time.
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from functools import partial
from typing import Any

from jet import Pipeline, Sinks, SourceBuilder

_last: dict[str, Counter] = {}


def rss_kib(pid: int | str = "self") -> int:
    """The process's resident set (``VmRSS``) in KiB, 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _type_counts() -> Counter:
    return Counter(type(obj).__qualname__ for obj in gc.get_objects())


def member_stats(index: int, collect: bool = False, top: int = 8) -> dict[str, Any]:
    """This process's figures; with ``collect`` after a full collection (``collected`` says how
    many objects it found unreachable)."""
    collected = gc.collect() if collect else None
    counts = _type_counts()
    previous = _last.get("counts")
    _last["counts"] = counts
    grown = [] if previous is None else (counts - previous).most_common(top)
    return {"member": index, "pid": os.getpid(), "rss_kib": rss_kib(), "gc_count": gc.get_count(),
            "frozen": gc.get_freeze_count(), "tracked": sum(counts.values()), "collected": collected,
            "counts": dict(counts), "grown": grown}


def _report(collect: bool, context: Any, buffer: Any) -> None:
    buffer.add(member_stats(context.global_index, collect))
    buffer.close()


def heap_stats_pipeline(collect: bool = False) -> Pipeline:
    """A job whose one source processor per member adds that member's :func:`member_stats` to
    ``Sinks.list("heap")``."""
    p = Pipeline.create()
    p.read_from(SourceBuilder.batch("heap-stats", lambda context: context)
                .fill_buffer_fn(partial(_report, collect)).distributed(1).build()).write_to(Sinks.list("heap"))
    return p


def heap_stats(cluster: Any, collect: bool = False) -> list[dict[str, Any]]:
    """Every member's :func:`member_stats`, in member order."""
    job = cluster.new_job(heap_stats_pipeline(collect))
    job.join(timeout=120)
    return sorted(job.result("heap"), key=lambda stats: stats["member"])
