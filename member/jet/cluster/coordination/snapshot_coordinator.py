"""The snapshots of one running execution (Jet's ``MasterSnapshotContext``).

One snapshot at a time, on a thread of its own: the first ``interval_s`` after the execution
started, each next one ``interval_s`` after the previous ended. Requests (a terminal snapshot for
suspend or restart, an export) wait in a queue and go before the schedule. A snapshot:

1. ``JobStore.begin_snapshot`` picks the id (one above the previous attempt) and the free slot and
   records the ongoing id;
2. phase 1 to every member of the execution: each saves its processors' state into the slot and
   answers its ``bytes``, ``keys`` and ``chunks``;
3. every member answered OK: the commit (the job record names this snapshot as the last good one);
   a member's error, or no answer within ``timeout_s``, and the last good snapshot stays;
4. phase 2 to every member with the outcome (sinks commit, or roll back, their transactions);
5. an export request copies the committed snapshot to its name.

Once :meth:`stop` is called (the execution ended or is being cancelled) nothing more is committed
or started: answers of an old execution never touch the store (Jet's PR #2824).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

from jet.cluster.coordination.context import CALL_SLACK_S
from jet.cluster.coordination.job_store import JobStore
from jet.cluster.links import messages
from jet.snapshot import SnapshotInfo

log = logging.getLogger("jet.cluster.snapshots")

MemberCalls = Callable[[str, dict[str, Any], float], dict[int, Future]]
"""``calls(message type, header fields, timeout_s)``: the message about this execution to each of
its members, concurrently; a future of each reply."""


class SnapshotFailedError(RuntimeError):
    """A snapshot that was not committed; the message names the member and why."""


@dataclass
class SnapshotRequest:
    """A snapshot asked for out of schedule; ``future`` gets the committed :class:`SnapshotInfo`."""

    terminal: bool = False
    export_name: str | None = None
    future: Future = field(default_factory=Future)


@dataclass(frozen=True)
class SnapshotResult:
    """What one snapshot attempt came to, for the job's record and metrics."""

    snapshot_id: int
    ok: bool
    started: float
    """Wall-clock time it began."""
    duration_ms: int
    bytes: int = 0
    keys: int = 0
    chunks: int = 0
    error: str = ""


class SnapshotCoordinator:
    """Takes the snapshots of one execution of a job."""

    def __init__(self, job_id: str, execution_id: int, store: JobStore, calls: MemberCalls, *,
                 interval_s: float, timeout_s: float, on_result: Callable[[SnapshotResult], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.job_id = job_id
        self.execution_id = execution_id
        self._store = store
        self._calls = calls
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._on_result = on_result
        self._clock = clock
        self._changed = threading.Condition()
        self._committed = 0
        """Snapshots this execution committed (the first is logged at INFO, the rest at DEBUG)."""
        self._queue: deque[SnapshotRequest] = deque()
        self._stopped = False
        self._terminal_done = False
        self._thread = threading.Thread(target=self._loop, name=f"jet-snapshots-{job_id}", daemon=True)

    def start(self) -> "SnapshotCoordinator":
        self._thread.start()
        return self

    def request(self, terminal: bool = False, export_name: str | None = None) -> Future:
        """Queue a snapshot; the future gets its :class:`SnapshotInfo` or a :class:`SnapshotFailedError`."""
        request = SnapshotRequest(terminal, export_name)
        with self._changed:
            if self._stopped or self._terminal_done:
                request.future.set_exception(SnapshotFailedError(
                    f"job {self.job_id}: execution {self.execution_id} is ending; no more snapshots"))
                return request.future
            self._queue.append(request)
            self._changed.notify_all()
        return request.future

    def stop(self, wait_s: float = 0.0) -> None:
        """No more snapshots of this execution; queued requests fail. ``wait_s``: how long to
        wait for a snapshot in flight to end (its calls are bounded anyway)."""
        with self._changed:
            self._stopped = True
            pending = list(self._queue)
            self._queue.clear()
            self._changed.notify_all()
        for request in pending:
            request.future.set_exception(SnapshotFailedError(
                f"job {self.job_id}: execution {self.execution_id} ended before the snapshot was taken"))
        if wait_s > 0 and self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(wait_s)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _loop(self) -> None:
        due = self._clock() + self.interval_s
        while True:
            with self._changed:
                while not (self._stopped or self._queue or self._terminal_done) and self._clock() < due:
                    self._changed.wait(max(0.0, due - self._clock()))
                if self._stopped or (self._terminal_done and not self._queue):
                    return
                request = self._queue.popleft() if self._queue else SnapshotRequest()
            if self._terminal_done:
                request.future.set_exception(SnapshotFailedError(
                    f"job {self.job_id}: its terminal snapshot was taken; the execution is ending"))
                continue
            try:
                info = self._take(request)
            except BaseException as e:  # noqa: BLE001 - the future carries it; the schedule goes on
                request.future.set_exception(e)
            else:
                request.future.set_result(info)
            due = self._clock() + self.interval_s

    def _take(self, request: SnapshotRequest) -> SnapshotInfo:
        started_wall, started = time.time(), self._clock()
        try:
            writer = self._store.begin_snapshot(self.job_id)
        except Exception as e:  # noqa: BLE001 - the store cannot be written: counted as a failed snapshot
            self._on_result(SnapshotResult(-1, False, started_wall, 0, error=f"{type(e).__name__}: {e}"))
            raise SnapshotFailedError(f"job {self.job_id}: a snapshot could not begin: {e}") from e
        snapshot_id = writer.snapshot_id
        totals = {"bytes": 0, "keys": 0, "chunks": 0}
        error = self._phase1(writer.snapshot_id, writer.slot, request.terminal, totals)
        info = None
        if error is None and self._stopped:
            error = f"execution {self.execution_id} ended during the snapshot"
        if error is None:
            try:
                info = self._store.commit(writer, dict(totals))
            except Exception as e:  # noqa: BLE001 - not committed: the last good snapshot stays
                error = f"the commit failed: {type(e).__name__}: {e}"
        success = error is None
        if request.terminal and success:
            with self._changed:
                self._terminal_done = True
        if not self._stopped:
            self._phase2(snapshot_id, success)
        duration_ms = int((self._clock() - started) * 1000)
        self._on_result(SnapshotResult(snapshot_id, success, started_wall, duration_ms, error=error or "", **totals))
        if not success:
            log.warning("job %s: snapshot %d failed after %d ms: %s; the last good snapshot stays", self.job_id,
                        snapshot_id, duration_ms, error)
            raise SnapshotFailedError(f"job {self.job_id}: snapshot {snapshot_id} failed: {error}")
        # The first of an execution, a terminal one and an export at INFO; the regular ones, every
        # interval, at DEBUG (the job's record and /metrics count them).
        level = logging.INFO if self._committed == 0 or request.terminal or request.export_name else logging.DEBUG
        self._committed += 1
        log.log(level, "job %s: snapshot %d%s committed in %d ms (%d bytes, %d keys, %d chunks)", self.job_id,
                snapshot_id, " (terminal)" if request.terminal else "", duration_ms, totals["bytes"],
                totals["keys"], totals["chunks"])
        if request.export_name is not None:
            info = self._store.export(self.job_id, request.export_name)
            log.info("job %s: snapshot %d exported as %r", self.job_id, snapshot_id, request.export_name)
        return info

    def _phase1(self, snapshot_id: int, slot: int, terminal: bool, totals: dict[str, int]) -> str | None:
        """Phase 1 on every member; the first error (naming the member), or None with ``totals`` summed."""
        header = {"snapshot_id": snapshot_id, "slot": slot, "terminal": terminal,
                  "timeout_s": self.timeout_s}
        error = None
        for member, future in sorted(self._calls(messages.SNAPSHOT_PHASE1, header, self.timeout_s).items()):
            try:
                reply, _ = messages.decode_message(future.result(timeout=self.timeout_s + CALL_SLACK_S))
            except Exception as e:  # noqa: BLE001 - any member's failure fails the snapshot
                error = error or f"member {member}: {type(e).__name__}: {messages.describe_call_error(e, self.timeout_s)}"
                continue
            if reply.get("error"):
                error = error or f"member {member}: {reply['error']}"
                continue
            for name in totals:
                totals[name] += int(reply.get(name, 0))
        return error

    def _phase2(self, snapshot_id: int, success: bool) -> None:
        header = {"snapshot_id": snapshot_id, "success": success, "timeout_s": self.timeout_s}
        for member, future in sorted(self._calls(messages.SNAPSHOT_PHASE2, header, self.timeout_s).items()):
            try:
                reply, _ = messages.decode_message(future.result(timeout=self.timeout_s + CALL_SLACK_S))
                error = reply.get("error")
            except Exception as e:  # noqa: BLE001 - the execution's own failure handling takes over
                error = messages.describe_call_error(e, self.timeout_s)
            if error:
                log.warning("job %s: phase 2 of snapshot %d on member %d: %s", self.job_id, snapshot_id, member,
                            error)

