"""One job's execution on one member: init, start, cancel, cleanup, and the completion report.

The coordinator sends ``init`` with the plan message (job id, execution id, cloudpickled DAG,
the execution's members, partition owners) to each member of the execution (all members, or
those that are up for a job with ``auto_scaling``); this member builds its
:class:`DistributedExecutionPlan`, registers the receivers and senders with the
:class:`MemberNetwork` (which hands over the frames of quicker peers that came first) and, still
within ``init``, ``start`` hands the tasklets to the member's shared
:class:`TaskletExecutionService`. When the execution future completes, a thread of its own (never
a cooperative worker: pickling large results there would stall every other job's tasklets)
builds the end report (the :class:`ExecutionOutcome`, the plan's named results and vertex
metrics), keeps it in ``report`` until cleanup (the coordinator may ask for it when the report
was lost) and calls ``on_done`` with the outcome and this execution. A lost peer fails the
execution with a :class:`JobFailedError` naming that member.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

import cloudpickle

from jet.cluster.edges.distributed_plan import DistributedExecutionPlan, check_execution_members
from jet.cluster.edges.edge_metrics import execution_measurements, packed_execution_measurements, plan_figures
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.executions.observables import Publisher, register_publisher, unregister_publisher
from jet.cluster.executions.outcome import ExecutionOutcome, FailureKind, encode_report
from jet.cluster.executions.report_threads import report_threads
from jet.cluster.links import messages
from jet.core.dag import DAG
from jet.core.edge import EdgeConfig
from jet.core.partitioner import PARTITION_COUNT
from jet.execution.errors import JobCancelledError, JobFailedError, MemberLostError
from jet.execution.job_future import ExecutionFuture
from jet.execution.measurements import PackedMeasurements
from jet.execution.plan import MemberTopology
from jet.execution.progress_log import ProgressLog, is_streaming
from jet.execution.service import TaskletExecutionService
from jet.execution.snapshot_context import SnapshotContext
from jet.execution.snapshot_restore import RestoreEntries, chunk_filter, route_restore_entries
from jet.job_config import ProcessingGuarantee
from jet.snapshot.store import SnapshotStore

log = logging.getLogger("jet.cluster.executions.job_execution")
CLEANUP_WAIT_S = 5.0
"""How long cleanup waits for a still-running execution to stop after cancelling it."""


@dataclass(frozen=True)
class PlanMessage:
    """What the coordinator tells every member about one execution (the header of ``init``)."""

    job_id: str
    execution_id: int
    member_index: int
    """The physical index of the member this message is for."""
    member_count: int
    """The cluster's size (every member's peer list)."""
    partition_owners: list[int]
    """Partition -> the owner's position in ``members``."""
    job_name: str = "job"
    processing_guarantee: str = "NONE"
    restore: dict[str, Any] | None = None
    """The snapshot to restore: ``{"job_id", "snapshot_id", "slot"}`` (a job's last good one) or
    ``{"export": name}``; None starts empty."""
    first_snapshot_id: int = 0
    """The id the execution's first snapshot will have (ids rise across a job's executions)."""
    members: list[int] | None = None
    """The execution's members (physical indices, ascending); None: every member of the cluster.
    Positions in this list are what the execution's topology, partition owners and ``Context``
    (``member_index``, ``member_count``, global processor indices) count."""
    metrics_enabled: bool = True
    """The job config's ``metrics_enabled``: False skips the counting only metrics need."""

    @property
    def execution_members(self) -> list[int]:
        """The execution's members, physical indices ascending."""
        return list(range(self.member_count)) if self.members is None else list(self.members)

    def topology(self) -> MemberTopology:
        """This member's place in the execution: its position among the execution's members.
        Raises ``ValueError`` for a message that contradicts itself."""
        members = check_execution_members(self.execution_members, self.member_count)
        if self.member_index not in members:
            raise ValueError(f"init of job {self.job_id} reached member {self.member_index}, which is not one "
                             f"of the execution's members {members}")
        owners = list(self.partition_owners)
        if len(owners) != PARTITION_COUNT or any(not 0 <= o < len(members) for o in owners):
            raise ValueError(f"init of job {self.job_id}: partition_owners must list {PARTITION_COUNT} positions "
                             f"0..{len(members) - 1}, got {len(owners)} entries from {min(owners, default=None)} to "
                             f"{max(owners, default=None)}")
        return MemberTopology(members.index(self.member_index), len(members), owners)

    def to_header(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_header(cls, header: dict[str, Any]) -> "PlanMessage":
        missing = [k for k in ("job_id", "execution_id", "member_index", "member_count", "partition_owners")
                   if k not in header]
        if missing:
            raise ValueError(f"init message lacks field(s) {', '.join(missing)}")
        return cls(**{k: header[k] for k in cls.__dataclass_fields__ if k in header})


class JobExecution:
    """This member's part of one execution of a job."""

    def __init__(self, plan_message: PlanMessage, dag_bytes: bytes, *, network: MemberNetwork,
                 service: TaskletExecutionService, on_done: Callable[[ExecutionOutcome, "JobExecution"], None],
                 edge_defaults: EdgeConfig | None = None, flow_control_period_ms: int = 100,
                 publish_observable: Callable[[str, str, int, list], None] | None = None,
                 progress_log_interval_ms: int = 0, snapshot_store: SnapshotStore | None = None) -> None:
        """Unpickle the DAG (bytes from an authenticated peer only), build the plan, register it.

        ``publish_observable(job_id, name, capacity, items)`` takes the items of the job's
        observable sinks on this member (see :mod:`jet.cluster.executions.observables`). A streaming job
        logs its progress every ``progress_log_interval_ms`` (0: never)."""
        self.message = plan_message
        self.job_id = plan_message.job_id
        self.execution_id = plan_message.execution_id
        self.member_index = plan_message.member_index
        self._network = network
        self._service = service
        self._on_done = on_done
        self._lock = threading.Lock()
        self._future: ExecutionFuture | None = None
        self._pending_failure: JobFailedError | None = None
        self.report: tuple[dict[str, Any], bytes] | None = None
        """The end report (header, blob) once the execution finished, until cleanup."""
        dag = cloudpickle.loads(dag_bytes)
        if not isinstance(dag, DAG):
            raise TypeError(f"init of job {self.job_id}: the payload is a {type(dag).__name__}, not a DAG")
        topology = plan_message.topology()
        members = plan_message.execution_members
        guarantee = ProcessingGuarantee.parse(plan_message.processing_guarantee)
        self._store = snapshot_store
        if (guarantee.snapshots or plan_message.restore) and snapshot_store is None:
            raise ValueError(f"job {self.job_id} has the guarantee {guarantee.value} or restores a snapshot, "
                             f"but member {self.member_index} has no snapshot store (setting snapshot_store)")
        self.snapshot_context = (SnapshotContext(guarantee, first_snapshot_id=plan_message.first_snapshot_id,
                                                 name=f"job {self.job_id} on member {self.member_index}")
                                 if guarantee.snapshots else None)
        self.plan = DistributedExecutionPlan(
            dag, network=network, execution_id=self.execution_id, topology=topology,
            cooperative_threads=service.cooperative_threads, edge_defaults=edge_defaults,
            flow_control_period_ms=flow_control_period_ms, job_id=self.job_id,
            snapshot_context=self.snapshot_context, members=members)
        self.plan.metrics_enabled = bool(plan_message.metrics_enabled)
        if plan_message.restore:
            self.plan.restore_entries = self._restore(plan_message.restore, dag, topology)
        self._tasklets = self.plan.build()
        self._progress_log = (ProgressLog(f"job {self.job_id} on member {self.member_index}",
                                          self.figures, progress_log_interval_ms)
                              if progress_log_interval_ms > 0 and is_streaming(dag) else None)
        peers = {m for m in members if m != self.member_index}
        network.register(self.execution_id, self.plan.receivers, self.plan.senders, peers,
                         self._peer_lost, self.plan.done_relay)
        self._publisher = None if publish_observable is None else _job_publisher(publish_observable, self.job_id)
        # The job's observable sinks look their publisher up by Context.member_index: the position.
        self._position = topology.member_index
        if self._publisher is not None:
            register_publisher(self.job_id, self._position, self._publisher)

    def figures(self) -> dict[str, dict[str, int]]:
        """Each vertex's figures on this member (see :mod:`jet.execution.vertex_metrics`)."""
        return plan_figures(self.plan)

    def measurements(self) -> list[dict]:
        """This member's measurements of the execution (see :mod:`jet.execution.measurements`)."""
        return execution_measurements(self)

    def packed_measurements(self) -> PackedMeasurements:
        """:meth:`measurements` in their wire form."""
        return packed_execution_measurements(self)

    def _restore(self, restore: dict[str, Any], dag: DAG, topology: MemberTopology) -> RestoreEntries:
        """This member's share of the snapshot ``restore`` names: only the chunks of partition
        groups it owns, and the chunks every member reads."""
        store, counts = self._store, {"read": 0, "skipped": 0, "entries": 0}
        wanted_here = chunk_filter(dag, topology)

        def wanted(vertex: str, group: int | None) -> bool:
            read = wanted_here(vertex, group)
            counts["read" if read else "skipped"] += 1
            return read

        def counted(entries):
            for entry in entries:
                counts["entries"] += 1
                yield entry

        if "export" in restore:
            what = f"exported snapshot {restore['export']!r}"
            entries = store.read_export(str(restore["export"]), wanted)
        else:
            what = f"snapshot {restore.get('snapshot_id')} of job {restore.get('job_id')}"
            entries = store.read_snapshot(str(restore["job_id"]), expected_id=restore.get("snapshot_id"),
                                          wanted=wanted)
        started, cpu = time.perf_counter(), time.thread_time()
        routed = route_restore_entries(counted(entries), dag, self.plan.local_parallelism, topology)
        log.info("job %s: member %d restores %s: %d of %d chunks read, %d entries, %.0f ms (%.0f ms of CPU)",
                 self.job_id, self.member_index, what, counts["read"], counts["read"] + counts["skipped"],
                 counts["entries"], (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000)
        return routed

    # -- snapshots ----------------------------------------------------------------------------
    def snapshot_phase1(self, snapshot_id: int, slot: int, terminal: bool, timeout_s: float) -> dict[str, int]:
        """Take this member's part of snapshot ``snapshot_id`` into ``slot`` of the store; the
        counts of what it wrote (``keys``, ``bytes``, ``chunks``). Raises when it cannot
        complete within ``timeout_s``."""
        context = self._require_snapshots(snapshot_id)
        writer = self._store.join_snapshot(self.job_id, snapshot_id, slot)
        member = self.member_index

        def write_chunk(vertex: str, sequence: int, data: bytes, group: int | None) -> int:
            writer.write_chunk_bytes(vertex, member, sequence, data, group)
            return len(data)

        future = context.start_phase1(snapshot_id, terminal, write_chunk)
        return future.result(timeout=timeout_s)

    def snapshot_phase2(self, snapshot_id: int, success: bool, timeout_s: float) -> None:
        """Every live processor commits (``success``) or forgets the prepared work of the snapshot."""
        self._require_snapshots(snapshot_id).start_phase2(snapshot_id, success).result(timeout=timeout_s)

    def _require_snapshots(self, snapshot_id: int) -> SnapshotContext:
        if self.snapshot_context is None:
            raise ValueError(f"job {self.job_id}: execution {self.execution_id} takes no snapshots "
                             f"(snapshot {snapshot_id} requested); its guarantee is NONE")
        return self.snapshot_context

    @property
    def started(self) -> bool:
        return self._future is not None

    def start(self) -> None:
        """Submit the tasklets; a failure that came before the start fails the execution at once."""
        with self._lock:
            if self._future is not None:
                raise RuntimeError(f"execution {self.execution_id} of job {self.job_id} already started")
            self._future = self._service.submit(self._tasklets, f"{self.job_id}@member{self.member_index}")
            pending = self._pending_failure
        if pending is not None:
            self._future.fail(pending)
        if self._progress_log is not None:
            self._progress_log.start()
        self._future.add_done_callback(self._completed)

    def cancel(self, reason: str) -> None:
        """Stop the execution; a started one reports (cancelled) when its tasklets are dropped."""
        self.fail(JobCancelledError(f"job {self.job_id} was cancelled on member {self.member_index}: {reason}"))

    def fail(self, failure: JobFailedError) -> None:
        with self._lock:
            future = self._future
            if future is None:
                self._pending_failure = self._pending_failure or failure
                return
        future.fail(failure)

    def wait(self, timeout_s: float) -> bool:
        """Wait for a started execution to finish; True at once when never started."""
        future = self._future
        return True if future is None else future.wait(timeout_s)

    def cleanup(self) -> None:
        """Unregister from the network; a still-running execution is cancelled first."""
        if self._future is not None and not self._future.is_done():
            self.cancel("cleaned up")
            if not self._future.wait(CLEANUP_WAIT_S):
                log.warning("job %s: execution %d on member %d still runs %.0f s after its cancel (%s)",
                            self.job_id, self.execution_id, self.member_index, CLEANUP_WAIT_S,
                            ", ".join(self._future.running_tasklets()))
        self._network.unregister(self.execution_id)
        if self._publisher is not None:
            unregister_publisher(self.job_id, self._position, self._publisher)

    def _peer_lost(self, peer: int, error: BaseException) -> None:
        failure = MemberLostError(f"member {peer} was lost: {error}", tasklet=f"connection to member {peer}",
                                  traceback_text=f"connection to member {peer} lost: {error}")
        log.warning("job %s, execution %d stops on member %d: %s", self.job_id, self.execution_id,
                    self.member_index, failure)
        self.fail(failure)

    def report_payload(self) -> bytes | None:
        """The end report as an ``execution_done`` payload, or None while running."""
        report = self.report
        return None if report is None else messages.encode_message(*report)

    def _completed(self, future: ExecutionFuture) -> None:
        """On the thread that finished the last tasklet (a cooperative worker, usually): hand
        the report over to a report thread at once (starting a thread per execution cost the
        worker more than the rest of a tiny job's completion)."""
        try:
            report_threads().submit(self._finish_logged, future)
        except RuntimeError:  # the interpreter is shutting down: no new threads
            self._finish_logged(future)

    def _finish_logged(self, future: ExecutionFuture) -> None:
        try:
            self._finish(future)
        except Exception:  # a pool would keep it in a future nobody reads
            log.exception("job %s: the end report of execution %d on member %d failed", self.job_id,
                          self.execution_id, self.member_index)

    def _finish(self, future: ExecutionFuture) -> None:
        if self._progress_log is not None:
            self._progress_log.stop()
        if self.snapshot_context is not None:
            self.snapshot_context.execution_ended(future.failure)
        outcome = ExecutionOutcome.of_failure(self.job_id, self.execution_id, self.member_index, future.failure)
        if outcome.ok and self.snapshot_context is None:
            # With a guarantee a snapshot's phase 2 may still come after a success; without one
            # nothing but the report is asked of it, so its member cleans it up at once and the
            # coordinator sends it no ``complete``.
            outcome = replace(outcome, cleaned_up=True)
        if outcome.ok:
            log.info("job %s: execution %d completed on member %d", self.job_id, self.execution_id,
                     self.member_index)
        elif outcome.cancelled:
            log.info("job %s: execution %d cancelled on member %d", self.job_id, self.execution_id,
                     self.member_index)
        elif outcome.kind is FailureKind.MEMBER_LOST:  # a lost peer, or a link to one that broke
            log.warning("job %s: execution %d stopped on member %d: %s", self.job_id, self.execution_id,
                        self.member_index, outcome.error)
        else:
            log.error("job %s: execution %d failed on member %d in %s: %s\n%s", self.job_id,
                      self.execution_id, self.member_index, outcome.tasklet, outcome.error, outcome.traceback)
        # A cancelled execution reports what its list sinks held: a streaming job ends so.
        results = self.plan.results if outcome.ok or outcome.cancelled else {}
        self.report = encode_report(outcome, results, self.figures(), self.packed_measurements())
        self._on_done(outcome, self)


def _job_publisher(publish: Callable[[str, str, int, list], None], job_id: str) -> Publisher:
    def publish_for_job(name: str, capacity: int, items: list) -> None:
        publish(job_id, name, capacity, items)
    return publish_for_job
