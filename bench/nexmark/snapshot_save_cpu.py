"""CPU seconds of one snapshot save of a query's keyed state, through a real tasklet (its
portions, partition groups and pickling), without members: what exactly-once costs per
snapshot on top of the query.

    python bench/nexmark/snapshot_save_cpu.py [q18,lists] [--events 1000000] [--repeat 5]

q18: the first stage of q18's day-long tumbling window (``max_by`` per bidder and auction)
after all the bids, 265,594 keys at 1 M events. lists: a stateful mapping of 200,000 keys, each
state the list of its latest 10 values (as q6's sellers keep their latest prices), after 1 M
items. Each round builds the state again, saves it
while timing ``time.process_time()`` around the tasklet's calls, and prints the keys, the CPU
seconds and the calls the save took; the machine's speed moves from minute to minute, so
compare trees by alternating runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "member"), str(Path(__file__).resolve().parents[1])]

from jet.core.partitioner import murmur_partition  # noqa: E402
from jet.core.processor import Context  # noqa: E402
from jet.core.processors import accumulate_by_frame_p, transform_stateful_p  # noqa: E402
from jet.core.sliding_window_policy import tumbling_win_policy  # noqa: E402
from jet.execution.gc_tuning import settle_member_heap  # noqa: E402
from jet.execution.processor_tasklet import ProcessorState, ProcessorTasklet  # noqa: E402
from jet.execution.snapshot_context import SnapshotContext  # noqa: E402
from jet.job_config import ProcessingGuarantee  # noqa: E402
from jet.pipeline.aggregate_operations import AggregateOperations  # noqa: E402

from nexmark import functions as f  # noqa: E402
from nexmark.events import generated  # noqa: E402
from nexmark.generator import GeneratorConfig  # noqa: E402
from nexmark.processor_cpu import CHUNK, DrivenProcessor  # noqa: E402


def q18(events: list) -> Callable[[], Any]:
    bids = [(ts, e) for ts, e in events if f.is_bid(e)]
    policy, operation = tumbling_win_policy(f.DAY_MS), AggregateOperations.max_by(f.latest)

    def state() -> Any:
        driven = DrivenProcessor(accumulate_by_frame_p(f.q18_key, policy, operation))
        for start in range(0, len(bids), CHUNK):
            driven.process(bids[start:start + CHUNK])
        return driven.processor
    return state


def save(processor: Any) -> tuple[float, int]:
    """(CPU seconds, calls) of one save of ``processor``'s state through a tasklet."""
    context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, name="member 0")
    tasklet = ProcessorTasklet("state#0", processor, Context(vertex_name="state"), [], [], [], context,
                               snapshot_partition=murmur_partition)
    tasklet.init()
    phase1 = context.start_phase1(0, False, lambda vertex, sequence, data, group: len(data))
    started, calls = time.process_time(), 0
    while tasklet.saved_snapshot_id < 0 or tasklet.state is ProcessorState.SAVE_SNAPSHOT:
        tasklet.call()
        calls += 1
    took = time.process_time() - started
    phase1.result(timeout=60)
    context.execution_ended(None)
    return took, calls


def _latest_ten(state: list, key: int, item: tuple) -> int:
    state.append(item[1])
    del state[:-10]
    return len(state)


def lists(events: list) -> Callable[[], Any]:
    items = [(1, (n % 200_000, n)) for n in range(len(events))]

    def state() -> Any:
        driven = DrivenProcessor(transform_stateful_p("map", f.first, 0, list, _latest_ten))
        for start in range(0, len(items), CHUNK):
            driven.process(items[start:start + CHUNK])
        return driven.processor
    return state


def _keys(processor: Any) -> int:
    frames = getattr(processor, "frames", None)
    return len(processor.states) if frames is None else sum(map(len, frames.values()))


QUERIES = {"q18": q18, "lists": lists}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries", nargs="?", default="q18,lists")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    events = generated(GeneratorConfig(events=args.events))
    settle_member_heap()
    for name in args.queries.split(","):
        state = QUERIES[name](events)
        for _ in range(args.repeat):
            processor = state()
            keys = _keys(processor)
            took, calls = save(processor)
            print(f"{name}: {keys:,} keys saved in {took:.3f} s CPU, {calls} calls", flush=True)


if __name__ == "__main__":
    main()
