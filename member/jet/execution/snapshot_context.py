"""SnapshotContext: one execution's snapshots on one member (Jet's ``SnapshotContext``).

The coordinator drives a snapshot in two phases. :meth:`start_phase1` publishes the snapshot
id, which tasklets with no live input (sources) poll between two ``complete()`` calls: they
save their state and emit the barrier; every other tasklet saves once the barrier reached it
on every live input. Each saved tasklet hands its entries here; a writer thread writes them
as chunks into the snapshot store, and phase 1 ends on this member when every tasklet saved
(or had ended) and every chunk is written. :meth:`start_phase2` publishes the commit, which
every live tasklet runs (``snapshot_commit_finish``) at the start of its next call.

Publishing phase 1 waits while a tasklet still has inputs of a later priority group to read
(a hash join's build side): its barriers could not be aligned before those inputs end.

A tasklet that finished is recorded in every later snapshot (a :class:`ProcessorEnded` entry),
so a restore does not run a finished source, or a finished aggregation's ``complete()``, again.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from jet.core.snapshot_keys import ProcessorEnded
from jet.execution.backoff import wake_parked_workers
from jet.execution.snapshot_portions import Chunk, SnapshotPortions, entries_chunks
from jet.job_config import ProcessingGuarantee

log = logging.getLogger("jet.execution.snapshot")

ChunkWriter = Callable[[str, int, bytes, "int | None"], int]
"""``write(vertex, sequence, data, group) -> bytes written``: store one chunk of a snapshot,
``data`` being pickles of ``(vertex, entries)`` of partition group ``group`` (None: entries every
member reads; see :mod:`jet.execution.snapshot_portions`); raises on failure."""


class _Pickled:
    """A tasklet's saved entries, already pickled into chunks (:class:`SnapshotPortions`)."""

    def __init__(self, count: int, chunks: list[Chunk]) -> None:
        self.count = count
        self.chunks = chunks

    def __len__(self) -> int:
        return self.count


class _Finished:
    def __repr__(self) -> str:
        return "PROCESSOR_FINISHED"


PROCESSOR_FINISHED = _Finished()
"""A restored processor's entries replaced by this: it had finished when the snapshot was taken,
so it starts finished (emits DONE) instead of doing that work again."""


class SnapshotPhaseError(RuntimeError):
    """A snapshot phase could not complete on this member."""


class _Phase:
    """One phase of one snapshot: the tasklets still due and the future it completes."""

    def __init__(self, snapshot_id: int, remaining: set) -> None:
        self.snapshot_id = snapshot_id
        self.remaining = remaining
        self.future: Future = Future()
        self.keys = 0
        self.bytes = 0
        self.chunks = 0
        self.writes_pending = 0


class SnapshotContext:
    """The snapshot state one execution's tasklets poll; created per execution and member."""

    def __init__(self, guarantee: ProcessingGuarantee, *, first_snapshot_id: int = 0,
                 name: str = "execution") -> None:
        self.guarantee = guarantee
        self.wait_for_all_barriers = guarantee is ProcessingGuarantee.EXACTLY_ONCE
        self.first_snapshot_id = first_snapshot_id
        self.name = name
        self.active_phase1_id = first_snapshot_id - 1
        """The snapshot sources must take (polled by the tasklets, written last when published)."""
        self.active_is_terminal = False
        self.active_phase2_id = first_snapshot_id - 1
        """The snapshot whose commit the tasklets must run."""
        self.phase2_success = True
        self._lock = threading.Lock()
        self._live: set = set()
        self._waiting_for_groups: set = set()
        self._phase1: _Phase | None = None
        self._phase2: _Phase | None = None
        self._unpublished: tuple[int, bool] | None = None
        self._writer: ChunkWriter | None = None
        self._sequence = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jet-snapshot-writer")
        self._failure: BaseException | None = None
        self._ended: dict[str, list] = {}
        """Per vertex, the ProcessorEnded entries of its finished tasklets."""
        self.saved_bytes: dict[Any, int] = {}
        """Per tasklet, the bytes written of its part of the last snapshot it saved, so far while
        that is being written (its ``snapshotBytes``; written under the lock, read by metrics
        without it)."""
        self._early: dict[int, list[tuple[Any, str, list]]] = {}
        """Saves of a snapshot whose phase 1 has not reached this member yet: barriers from
        other members' sources may arrive before the coordinator's call does."""

    # -- the tasklets' side ---------------------------------------------------------------------
    def register(self, tasklet: Any, has_priority_groups: bool) -> None:
        """At build time: a processor tasklet that takes part in snapshots."""
        with self._lock:
            self._live.add(tasklet)
            if has_priority_groups:
                self._waiting_for_groups.add(tasklet)

    def priority_groups_done(self, tasklet: Any) -> None:
        """The tasklet reads its last priority group now: a postponed snapshot may begin."""
        with self._lock:
            self._waiting_for_groups.discard(tasklet)
            self._publish_if_due()

    def tasklet_saved(self, tasklet: Any, snapshot_id: int, vertex: str, saved: "SnapshotPortions | list") -> None:
        """The tasklet saved its state for ``snapshot_id`` (its barrier goes downstream next):
        the portions it pickled as the processor offered them, or a list of entries pickled here
        at once (on the tasklet's thread, before the state changes again)."""
        if isinstance(saved, SnapshotPortions):
            entries = _Pickled(saved.count, saved.chunks())
        else:
            entries = _Pickled(len(saved), entries_chunks(vertex, saved))
        with self._lock:
            phase = self._phase1
            if phase is None or snapshot_id > phase.snapshot_id:
                self._early.setdefault(snapshot_id, []).append((tasklet, vertex, entries))
                return
            if snapshot_id < phase.snapshot_id or phase.future.done():
                log.info("%s: %s saved snapshot %d, which a newer one superseded or which ended; its %d entries "
                         "are dropped", self.name, tasklet, snapshot_id, len(entries))
                return
            self._schedule_write(phase, vertex, entries, tasklet)
            phase.keys += entries.count
            phase.remaining.discard(tasklet)
            self._complete_phase1_if_done(phase)

    def tasklet_committed(self, tasklet: Any, snapshot_id: int) -> None:
        with self._lock:
            phase = self._phase2
            if phase is not None and phase.snapshot_id == snapshot_id:
                phase.remaining.discard(tasklet)
                self._complete_phase2_if_done(phase)

    def tasklet_ended(self, tasklet: Any) -> None:
        """The tasklet emitted DONE: it takes part in no more snapshot or commit; every later
        snapshot (and the current one, if it had not saved it) records that it finished."""
        context = tasklet.context
        vertex = context.vertex_name
        marker = (ProcessorEnded(context.global_index, context.total_parallelism), None)
        with self._lock:
            self._live.discard(tasklet)
            self._waiting_for_groups.discard(tasklet)
            self._ended.setdefault(vertex, []).append(marker)
            phase = self._phase1
            if phase is not None and tasklet in phase.remaining and not phase.future.done():
                self._schedule_write(phase, vertex, [marker])
            for phase in (self._phase1, self._phase2):
                if phase is not None and tasklet in phase.remaining:
                    phase.remaining.discard(tasklet)
            if self._phase1 is not None:
                self._complete_phase1_if_done(self._phase1)
            if self._phase2 is not None:
                self._complete_phase2_if_done(self._phase2)
            self._publish_if_due()

    # -- the coordinator's side ----------------------------------------------------------------
    def start_phase1(self, snapshot_id: int, terminal: bool, write_chunk: ChunkWriter) -> Future:
        """Begin snapshot ``snapshot_id``; the future gives ``{"keys", "bytes", "chunks"}``."""
        with self._lock:
            if self._failure is not None:
                raise SnapshotPhaseError(f"{self.name}: the execution ended: {self._failure}")
            previous = self._phase1
            if snapshot_id <= self.active_phase1_id or (previous is not None and snapshot_id <= previous.snapshot_id):
                raise SnapshotPhaseError(f"{self.name}: snapshot {snapshot_id} requested after snapshot "
                                         f"{max(self.active_phase1_id, previous.snapshot_id if previous else -1)} "
                                         f"(ids must rise)")
            if previous is not None and not previous.future.done():
                # The coordinator gave up on it (a timeout); its barriers still in flight are dropped
                # wherever the newer one overtakes them.
                previous.future.set_exception(SnapshotPhaseError(
                    f"{self.name}: snapshot {previous.snapshot_id} was superseded by snapshot {snapshot_id}"))
            self._writer = write_chunk
            phase = _Phase(snapshot_id, set(self._live))
            self._phase1 = phase
            for vertex, markers in self._ended.items():
                self._schedule_write(phase, vertex, list(markers))
            for early_id in [i for i in self._early if i <= snapshot_id]:
                for tasklet, vertex, entries in self._early.pop(early_id):
                    if early_id == snapshot_id:
                        self._schedule_write(phase, vertex, entries, tasklet)
                        phase.keys += len(entries)
                        phase.remaining.discard(tasklet)
            self._unpublished = (snapshot_id, terminal)
            self._publish_if_due()
            self._complete_phase1_if_done(phase)
            return phase.future

    def start_phase2(self, snapshot_id: int, success: bool) -> Future:
        """Publish the commit (or the failure) of ``snapshot_id``; the future ends when every
        live tasklet ran ``snapshot_commit_finish``."""
        with self._lock:
            if self._phase2 is not None and self._phase2.snapshot_id == snapshot_id:
                return self._phase2.future  # a repeated request
            phase = _Phase(snapshot_id, set(self._live))
            self._phase2 = phase
            self.phase2_success = success
            self.active_phase2_id = snapshot_id
            self._complete_phase2_if_done(phase)
        wake_parked_workers()
        return phase.future

    def execution_ended(self, failure: BaseException | None) -> None:
        """The execution is over: phases still open fail (or complete, when it ended cleanly)."""
        with self._lock:
            self._failure = failure or SnapshotPhaseError("the execution completed")
            self._live.clear()
            for phase in (self._phase1, self._phase2):
                if phase is None or phase.future.done():
                    continue
                phase.remaining.clear()
                if failure is None:
                    if phase is self._phase1:
                        self._complete_phase1_if_done(phase)
                    else:
                        self._complete_phase2_if_done(phase)
                else:
                    phase.future.set_exception(SnapshotPhaseError(f"{self.name}: the execution ended: {failure}"))
        self._pool.shutdown(wait=False)

    # -- inside the lock -------------------------------------------------------------------------
    def _schedule_write(self, phase: _Phase, vertex: str, entries: "list | _Pickled", tasklet: Any = None) -> None:
        if tasklet is not None:
            self.saved_bytes[tasklet] = 0
        chunks = entries.chunks if isinstance(entries, _Pickled) else entries_chunks(vertex, entries)
        for group, parts in chunks:
            self._sequence += 1
            phase.writes_pending += 1
            self._pool.submit(self._write, phase, vertex, self._sequence, group, parts, tasklet)

    def _publish_if_due(self) -> None:
        if self._unpublished is None or self._waiting_for_groups:
            return
        snapshot_id, terminal = self._unpublished
        self._unpublished = None
        self.active_is_terminal = terminal
        self.active_phase1_id = snapshot_id  # last: a tasklet that sees the id sees the flag
        wake_parked_workers()  # a source on a parked thread begins the snapshot

    def _complete_phase1_if_done(self, phase: _Phase) -> None:
        if phase.remaining or phase.writes_pending or phase.future.done():
            return
        phase.future.set_result({"keys": phase.keys, "bytes": phase.bytes, "chunks": phase.chunks})

    def _complete_phase2_if_done(self, phase: _Phase) -> None:
        if not phase.remaining and not phase.future.done():
            phase.future.set_result(None)

    def _write(self, phase: _Phase, vertex: str, sequence: int, group: int | None, parts: list[bytes],
               tasklet: Any) -> None:
        try:
            written = self._writer(vertex, sequence, b"".join(parts), group)
        except BaseException as e:  # noqa: BLE001 - the snapshot fails, named, on the coordinator
            log.warning("%s: writing a chunk of snapshot %d (vertex %s) failed: %s", self.name,
                        phase.snapshot_id, vertex, e)
            with self._lock:
                if not phase.future.done():
                    phase.future.set_exception(SnapshotPhaseError(
                        f"{self.name}: writing snapshot {phase.snapshot_id} of vertex {vertex!r} failed: "
                        f"{type(e).__name__}: {e}"))
            return
        with self._lock:
            phase.writes_pending -= 1
            phase.chunks += 1
            phase.bytes += int(written or 0)
            if tasklet is not None:
                self.saved_bytes[tasklet] = self.saved_bytes.get(tasklet, 0) + int(written or 0)
            self._complete_phase1_if_done(phase)
