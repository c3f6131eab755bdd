"""Members played by a plain function: the coordinator's control calls answered in this process.

Each fake member keeps one number of state per execution (how many snapshots it took part in,
plus what it restored), writes it into the snapshot store at phase 1 under its own key, and
reports its execution's end the way a real member does (after a cancel, or after phase 2 of a
terminal snapshot). Tests read what each ``init`` asked to restore from ``inits``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import cloudpickle
from jet.cluster.coordination.coordinator import JobCoordinator
from jet.cluster.coordination.job_state import JobStatus
from jet.cluster.coordination.job_store import JobStore
from jet.cluster.executions.control_settings import ControlSettings
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind
from jet.cluster.links import messages
from jet.connectors.sinks import ListResultSinkP
from jet.core import DAG, Edge
from jet.core.processors import items_source_p
from jet.snapshot import SnapshotStore

VERTEX = "state"


def small_dag() -> bytes:
    dag = DAG()
    source = dag.new_vertex("source", items_source_p([1, 2, 3]), 1)
    sink = dag.new_vertex("sink", lambda: ListResultSinkP("default"), 1)
    dag.edge(Edge.between(source, sink))
    return cloudpickle.dumps(dag)


@dataclass
class FakeMembers:
    """The members of a cluster of ``count``, answering the coordinator's calls."""

    count: int
    store: SnapshotStore | None
    coordinator: JobCoordinator | None = None
    inits: list[dict] = field(default_factory=list)
    """Every init header, in order."""
    fail_phase1: int = 0
    """Phase-1 requests still to fail (member 1 fails them)."""
    running: dict[tuple[int, int], str] = field(default_factory=dict)
    """(execution id, member) -> job id of the executions started and not ended."""
    terminal: set[int] = field(default_factory=set)
    reports: list[threading.Thread] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    running_gate: threading.Event | None = None
    """When set, the coordinator's status listener waits for it as a job turns RUNNING (the
    moment between that and the start of its snapshots)."""

    def call(self, member: int, msg_type: str, payload: bytes, timeout_s: float) -> bytes:
        header, _ = messages.decode_message(payload)
        execution = header.get("execution_id")
        reply: dict = {}
        if msg_type == messages.INIT:  # a member starts its part within its init
            with self.lock:
                self.inits.append(header)
                self.running[(execution, member)] = header["job_id"]
        elif msg_type == messages.SNAPSHOT_PHASE1:
            reply = self._phase1(member, header)
        elif msg_type == messages.SNAPSHOT_PHASE2:
            if header["success"] and header["snapshot_id"] in self.terminal:
                self._end(execution, member, ExecutionOutcome(header["job_id"], execution, member, ok=True))
        elif msg_type == messages.CANCEL:
            self._end(execution, member, ExecutionOutcome(header["job_id"], execution, member, ok=False,
                                                          cancelled=True, error="JobCancelledError: cancelled",
                                                          kind=FailureKind.CANCELLED))
        elif msg_type == messages.EXECUTION_STATE:
            reply = {"state": "running"}
        elif msg_type == messages.EXECUTION_METRICS:
            reply = {"metrics": {}}
        return messages.encode_message(reply)

    def on_status(self, record) -> None:
        if record.status is JobStatus.RUNNING and self.running_gate is not None:
            self.running_gate.wait(30)

    def _phase1(self, member: int, header: dict) -> dict:
        with self.lock:
            if member == 1 and self.fail_phase1 > 0:
                self.fail_phase1 -= 1
                return {"error": "SnapshotError: fault injection"}
            if header["terminal"]:
                self.terminal.add(header["snapshot_id"])
        writer = self.store.join_snapshot(header["job_id"], header["snapshot_id"], header["slot"])
        writer.write_chunk(VERTEX, member, 0, [((member, header["execution_id"]), header["snapshot_id"])])
        return {"bytes": writer.bytes_written, "keys": writer.keys_written, "chunks": 1}

    def _end(self, execution: int, member: int, outcome: ExecutionOutcome) -> None:
        with self.lock:
            if self.running.pop((execution, member), None) is None:
                return
        report = threading.Thread(target=self.coordinator.on_execution_done, args=(outcome,), daemon=True)
        self.reports.append(report)
        report.start()

    def join_reports(self) -> None:
        """Wait until every report sent so far was taken by the coordinator."""
        for report in list(self.reports):
            report.join(10)

    def finish_all(self, cancelled: bool = False) -> None:
        """Every running execution completes on every member (a batch job's natural end), or is
        cancelled there (what a stopping member does to its executions)."""
        with self.lock:
            running = list(self.running.items())
        for (execution, member), job_id in running:
            self._end(execution, member, ExecutionOutcome(job_id, execution, member, ok=not cancelled,
                                                          cancelled=cancelled,
                                                          kind=FailureKind.CANCELLED if cancelled else FailureKind.NONE))


def fake_cluster(store_dir, count: int = 2, **control) -> tuple[JobCoordinator, FakeMembers]:
    store = None if store_dir is None else SnapshotStore(str(store_dir))
    members = FakeMembers(count, store)
    settings = ControlSettings(**{"restart_delay_ms": 0, "cancel_grace_ms": 2000, **control})
    members.coordinator = JobCoordinator(count, members.call, control=settings, job_store=JobStore(store),
                                         on_status=members.on_status)
    return members.coordinator, members
