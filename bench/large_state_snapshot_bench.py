"""Snapshots of large state (issue 32): the longest pause a snapshot causes on a cooperative
thread, and the time a member takes to restore its share.

    python bench/large_state_snapshot_bench.py [--keys-per-member 1000000] [--members 2] [--frames 1]

Each member's window processor (``aggregate_to_sliding_window_p``, counting per key, one frame
an hour long, or ``--frames`` frames of a sliding window with the keys spread over them) holds
the keys of the partitions that member owns, ``--keys-per-member`` of them, in the engine's
own objects: a ``ProcessorTasklet`` with the execution's ``SnapshotContext`` writing into a
``SnapshotStore`` in a temporary directory, as a member does. The snapshot is taken the way a
source tasklet takes it (between two calls), and every ``call()`` of the tasklet is timed until
the barrier went out: **the longest call is the longest time the snapshot held the
cooperative thread** (other tasklets of that thread run between two calls). Then the snapshot is
committed and each member's restore is timed as a member runs it at ``init``: read the snapshot
(the chunks it wants, where the code has partition groups), route the entries to its processor
(``route_restore_entries``), and feed them to a new processor through ``restore_from_snapshot``
and ``finish_snapshot_restore``. Members restore one after the other here; on a cluster they
restore at the same time, each on its own process.

The same script runs on code without portions (one ``save_to_snapshot`` call, everything read on
every member), for the before/after figures in bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "member")]

from jet.cluster.edges.distributed_plan import partition_owners  # noqa: E402
from jet.core import DAG, Edge  # noqa: E402
from jet.core.aggregate import counting  # noqa: E402
from jet.core.inbox import Inbox  # noqa: E402
from jet.core.partitioner import murmur_partition  # noqa: E402
from jet.core.processor import Context  # noqa: E402
from jet.core.processors.windows import aggregate_to_sliding_window_p  # noqa: E402
from jet.core.sliding_window_policy import sliding_win_policy  # noqa: E402
from jet.execution.gc_tuning import settle_member_heap  # noqa: E402
from jet.execution.plan import MemberTopology  # noqa: E402
from jet.execution.processor_tasklet import ProcessorTasklet  # noqa: E402
from jet.execution.snapshot_context import SnapshotContext  # noqa: E402
from jet.execution import snapshot_restore  # noqa: E402
from jet.job_config import ProcessingGuarantee  # noqa: E402
from jet.snapshot.store import SnapshotStore  # noqa: E402

HOUR_MS = 3_600_000
VERTEX = "window"
JOB = "large-state"
CHUNK = 8192


def _identity(key):
    return key


def window_supplier(frames: int):
    return aggregate_to_sliding_window_p(_identity, sliding_win_policy(frames * HOUR_MS, HOUR_MS), counting())


def member_keys(members: int, per_member: int) -> list[list[int]]:
    """Keys 0, 1, 2, ... dealt to the member owning their partition until each has enough."""
    owners = partition_owners(members)
    keys: list[list[int]] = [[] for _ in range(members)]
    key = 0
    while min(map(len, keys)) < per_member:
        owned = keys[owners[murmur_partition(key)]]
        if len(owned) < per_member:
            owned.append(key)
        key += 1
    return keys


def dag() -> DAG:
    d = DAG()
    source = d.new_vertex("source", window_supplier(1))
    window = d.new_vertex(VERTEX, window_supplier(1))
    d.edge(Edge.between(source, window).partitioned(_identity).distributed())
    return d


def _context(member: int, members: int) -> Context:
    return Context(vertex_name=VERTEX, local_index=0, local_parallelism=1, member_index=member,
                   member_count=members, processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)


def filled_tasklet(keys: list[int], frames: int, member: int, members: int,
                   context: SnapshotContext) -> ProcessorTasklet:
    """A tasklet whose window holds ``keys`` (spread over ``frames`` frames), as a source does."""
    grouping = getattr(snapshot_restore, "grouping_partition_fn", None)  # None: code before partition groups
    extra = {} if grouping is None else {"snapshot_partition": grouping(dag(), dag().get_vertex(VERTEX))}
    tasklet = ProcessorTasklet(f"{VERTEX}#0", window_supplier(frames)(), _context(member, members), [], [], [],
                               context, **extra)
    tasklet.init()
    inbox = Inbox()
    for start in range(0, len(keys), CHUNK):
        inbox.add_chunk([(1 + (k % frames) * HOUR_MS, k) for k in keys[start:start + CHUNK]])
        tasklet.processor.process(0, inbox)
    return tasklet


def take_snapshot(tasklet: ProcessorTasklet, context: SnapshotContext, write) -> list[float]:
    """Run the tasklet until it saved snapshot 0 and emitted the barrier; each call's ms."""
    future = context.start_phase1(0, False, write)
    calls = []
    while tasklet.saved_snapshot_id < 0 or tasklet.state.name in ("SAVE_SNAPSHOT", "EMIT_BARRIER"):
        started, cpu = time.perf_counter(), time.thread_time()
        tasklet.call()
        calls.append(((time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000))
    future.result(timeout=600)
    return calls


def restore(store: SnapshotStore, member: int, members: int, frames: int) -> tuple[float, float, int, int]:
    """One member's restore: (seconds, CPU seconds, entries read, keys restored)."""
    started, cpu = time.perf_counter(), time.process_time()
    topology = MemberTopology(member, members, partition_owners(members))
    d = dag()
    chunk_filter = getattr(snapshot_restore, "chunk_filter", None)
    if chunk_filter is not None:
        entries = store.read_snapshot(JOB, wanted=chunk_filter(d, topology))
    else:
        entries = store.read_snapshot(JOB)
    read = [0]

    def counted(entries):
        for entry in entries:
            read[0] += 1
            yield entry

    routed = snapshot_restore.route_restore_entries(counted(entries), d, {"source": 1, VERTEX: 1}, topology)
    processor = window_supplier(frames)()
    processor.init(None, _context(member, members))
    inbox = Inbox()
    inbox.add_chunk(list(routed[(VERTEX, 0)]))
    while inbox:
        processor.restore_from_snapshot(inbox)
    while not processor.finish_snapshot_restore():
        pass
    keys = len({key for accumulators in processor.frames.values() for key in accumulators})
    return time.perf_counter() - started, time.process_time() - cpu, read[0], keys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys-per-member", type=int, default=1_000_000)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--frames", type=int, default=1, help="frames per window, keys spread over them")
    args = parser.parse_args(argv)
    settle_member_heap()  # as a member process does
    keys = member_keys(args.members, args.keys_per_member)
    with tempfile.TemporaryDirectory(prefix="jet-large-state-") as root:
        store = SnapshotStore(root)
        writer = store.begin_snapshot(JOB, 0)
        total_keys = 0
        for member in range(args.members):
            context = SnapshotContext(ProcessingGuarantee.EXACTLY_ONCE, name=f"member {member}")
            tasklet = filled_tasklet(keys[member], args.frames, member, args.members, context)
            member_writer = store.join_snapshot(JOB, 0, writer.slot)

            def write(vertex, sequence, data, group=None, member=member, member_writer=member_writer):
                member_writer.write_chunk_bytes(vertex, member, sequence, data,
                                                *([] if group is None else [group]))
                return len(data)

            started = time.perf_counter()
            calls = take_snapshot(tasklet, context, write)
            elapsed = time.perf_counter() - started
            total_keys += tasklet.snapshot_keys
            context.execution_ended(None)
            longest = max(calls)
            print(f"member {member}: {len(keys[member])} keys saved in {len(calls)} calls, longest call "
                  f"{longest[0]:.1f} ms ({longest[1]:.1f} ms of this thread's CPU; the longest in CPU: "
                  f"{max(cpu for _, cpu in calls):.1f} ms), save to written {elapsed * 1000:.0f} ms")
        info = writer.commit({"keys": total_keys})
        print(f"snapshot: {info.chunk_count} chunks, {info.num_bytes / 1e6:.1f} MB, {total_keys} entries")
        times = []
        for member in range(args.members):
            seconds, cpu, read, restored = restore(store, member, args.members, args.frames)
            times.append(seconds)
            print(f"member {member}: restore {seconds:.2f} s ({cpu:.2f} s of CPU), {read} entries read, "
                  f"{restored} keys restored")
            if restored != len(keys[member]):
                raise SystemExit(f"member {member} restored {restored} keys, it had {len(keys[member])}")
        print(f"restore on {args.members} members: longest {max(times):.2f} s")


if __name__ == "__main__":
    main()
