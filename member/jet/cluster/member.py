"""One member process: gRPC server, a stream to every other member, jobs, coordination, HTTP.

Start-up: the gRPC server and the HTTP endpoint come up first (``/healthz`` answers 200), then the
member connects to its peers: of each pair, the lower index dials the higher one and both send their
frames over that one stream; control calls go to every peer on a channel of their own. Streams are
watched by heartbeats; a lost one fails the executions over it and is dialled again until the peer
is back, which then joins again (:mod:`jet.cluster.links.membership`), so a member that restarts rejoins
by itself. Member 0 also runs the :class:`JobCoordinator`. Every job's executions share one
:class:`TaskletExecutionService`.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from typing import Any, Callable

import cloudpickle

from jet.cluster.links import messages
from jet.cluster.links.auth import ANYONE, COORDINATOR_ONLY, MEMBERS, Caller, Role
from jet.cluster.coordination.coordinator import (EXECUTION_DONE_STATE, EXECUTION_RUNNING_STATE, JobCoordinator, JobRecord,
                                    JobStatus)
from jet.cluster.links.heartbeat import HeartbeatMonitor, check_heartbeat_settings
from jet.cluster.executions.job_execution import ExecutionOutcome, JobExecution, PlanMessage, decode_report
from jet.cluster.coordination.job_state import JobConfigError, JobStateError
from jet.cluster.coordination.job_store import JobStore
from jet.cluster.member_http import MemberHttpServer, MemberMetrics
from jet.cluster.links.membership import Membership, PeerDialer
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.executions.observables import READ_MAX_ITEMS, READ_WAIT_S, UnknownObservableError
from jet.cluster.links.packets import FrameType, PacketFormatError, frame_type
from jet.cluster.links.peers import PeerAddress, parse_peers
from jet.cluster.links.server_limits import MEMBER_CALL_THREADS, ServerLimits
from jet.cluster.settings import MemberSettings
from jet.cluster.links.stream_calls import StreamCalls
from jet.cluster.links.transport import FrameLink, MemberServer, PeerConnection, serve_control
from jet.core.dag import DAG, DagValidationError
from jet.core.edge import EdgeConfig
from jet.dashboard.api import DashboardApi
from jet.dashboard.load import process_load
from jet.execution.errors import JobCancelledError
from jet.execution.measurements import pack_measurements
from jet.execution.runner import default_cooperative_threads
from jet.execution.service import TaskletExecutionService
from jet.snapshot import SnapshotError, SnapshotStore

log = logging.getLogger("jet.cluster.member")

PEER_TIMEOUT_S = 300.0
MAX_WAIT_S = 30.0
REPORT_FIRST_BACKOFF_S = 0.1
REPORT_MAX_BACKOFF_S = 5.0
START_POLL_S = 0.2
"""How often a starting member looks whether it was stopped while it waits for its peers."""
LEAVING_NOTICE_TIMEOUT_S = 1.0
"""How long a stopping member waits for each peer to take its notice that it is leaving."""


class JobInitError(RuntimeError):
    """Building a job's execution on this member failed; the message holds the traceback."""


class Member:
    """A cluster member; ``start()`` brings it up and connects it, ``stop()`` shuts it down."""

    def __init__(self, settings: MemberSettings, *, token: str | None = None, member_key: str | None = None,
                 peer_timeout_s: float = PEER_TIMEOUT_S) -> None:
        self.settings = settings
        self.addresses: list[PeerAddress] = (parse_peers(settings.peers, settings.replicas) if settings.peers
                                             else [PeerAddress("127.0.0.1", settings.port)])
        index = settings.member_index if settings.member_index is not None else 0
        if not 0 <= index < len(self.addresses):
            raise ValueError(f"member index {index} is outside the {len(self.addresses)} peers "
                             f"({', '.join(map(str, self.addresses))})")
        self.index = index
        self.member_count = len(self.addresses)
        check_heartbeat_settings(settings.heartbeat_interval_ms, settings.heartbeat_timeout_ms)
        self._token = token if token is not None else settings.cluster_token()
        self._member_key = member_key if member_key is not None else self._configured_member_key(settings)
        self.host = settings.bind_host()
        self._tls = settings.tls_config()
        self._peer_timeout_s = peer_timeout_s
        self.threads = settings.cooperative_threads or default_cooperative_threads()
        self.edge_defaults = EdgeConfig(**asdict(settings.edge_defaults))
        self.metrics = MemberMetrics(index)
        self.service = TaskletExecutionService(self.threads)
        self.network = MemberNetwork(index, self._send_frame, settings.flow_control_period_ms)
        self.server = MemberServer(settings.port, self._token, self._tls, host=self.host,
                                   member_key=self._member_key, member_count=self.member_count,
                                   on_frame=self.network.on_frame, on_client_frame=self._on_client_frame,
                                   on_control=self._on_control, on_connection_lost=self._connection_lost,
                                   on_peer_connected=self._peer_stream_accepted, on_peer_lost=self._peer_stream_lost,
                                   limits=ServerLimits(client_streams=settings.max_client_streams,
                                                       client_calls=settings.max_client_calls,
                                                       member_streams=self.member_count),
                                   link_port=settings.link_port)
        self.snapshot_store = (SnapshotStore(settings.snapshot_store, endpoint_url=settings.snapshot_store_endpoint)
                               if settings.snapshot_store else None)
        """Where jobs with a guarantee keep their records and snapshots (shared by every member)."""
        self.dashboard = DashboardApi(self)
        """The dashboard's API (served by ``self.http``)."""
        self.coordinator = (JobCoordinator(self.member_count, self.call_member, start_call=self.start_call,
                                           cooperative_threads=self.threads,
                                           on_status=self._count_job, control=settings.control,
                                           job_store=JobStore(self.snapshot_store))
                            if index == 0 else None)
        remote = index != 0  # member 0 reports to itself in place: no network can lose that
        self._faults = {"drop_reports": settings.control.fault_drop_reports if remote else 0,
                        "unanswered_state_queries": settings.control.fault_unanswered_state_queries if remote else 0,
                        "fail_snapshot_phase1": settings.control.fault_fail_snapshot_phase1}
        """Fault injection for tests: how many more reports to drop and state queries to ignore."""
        self._serving = threading.Event()
        self.http = MemberHttpServer(self.host, settings.http_port, token=self._token, healthy=self._serving.is_set,
                                     latest_job=self._latest_job if index == 0 else None, metrics=self.metrics,
                                     dashboard=self.dashboard)
        self.membership = Membership(index, self.member_count, on_joined=self._member_joined,
                                     on_lost=self._member_lost)
        self.connections: dict[int, PeerConnection] = self.membership.connections
        """Each peer's control connection (replaced when it rejoins)."""
        self.calls = StreamCalls(self.membership.send, partial(serve_control, self._on_control),
                                 threads=MEMBER_CALL_THREADS + self.member_count)
        """Control calls to and from other members, over the member streams."""
        self.network.register_frame_handler(FrameType.CONTROL_CALL, self.calls.on_call_frame)
        self.network.register_frame_handler(FrameType.CONTROL_REPLY, self.calls.on_reply_frame)
        self._departed: set[int] = set()
        """Peers that said they are stopping: their streams closing is no loss worth a warning."""
        self._heartbeats = HeartbeatMonitor(self.membership.links, settings.heartbeat_interval_ms,
                                            settings.heartbeat_timeout_ms)
        self.executions: dict[int, JobExecution] = {}
        self._undelivered: dict[int, tuple[dict, bytes]] = {}
        """Execution id -> the end report of an execution cleaned up after its success, until delivered."""
        self.metrics.watch_executions(lambda: list(self.executions.values()))
        if self.coordinator is not None:
            self.metrics.watch_jobs(self.coordinator.records)
        self._lock = threading.Lock()
        self.connected = self.membership.all_joined
        """Set while the streams with every other member are up."""
        self.stopped = threading.Event()

    def _configured_member_key(self, settings: MemberSettings) -> str:
        """The member key; a cluster of one member, which nobody else can join, makes up its own."""
        if self.member_count == 1 and not settings.has_member_key():
            return secrets.token_urlsafe(32)
        return settings.member_key_value()

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> "Member":
        """Serve gRPC and HTTP, then connect to every peer: blocks until connected, or for
        ``peer_timeout_s`` at most, after which it warns and goes on trying in the background."""
        self.network.start()
        self.server.start()
        self._serving.set()
        self.http.start()
        log.info("member %d of %d serving gRPC on %s:%d and HTTP on port %d (%d cooperative threads)",
                 self.index, self.member_count, self.host, self.server.port, self.http.port, self.threads)
        self._connect()
        return self

    def _connect(self) -> None:
        """Dial every higher peer (for ever, see :class:`PeerDialer`), serve the lower ones' streams,
        and watch them all with heartbeats; wait for the whole cluster, bounded."""
        self._heartbeats.start()
        accept_timeout_s = self._heartbeats.timeout_s
        for peer in range(self.index + 1, self.member_count):
            PeerDialer(self.membership, peer, self.addresses[peer], partial(self._dial, peer), self.stopped,
                       accept_timeout_s).start()
        deadline = time.monotonic() + self._peer_timeout_s
        while not self.connected.wait(START_POLL_S) and not self.stopped.is_set():
            if time.monotonic() > deadline:
                log.warning("member %d is not connected to members %s after %.0f s; it goes on trying",
                            self.index, self.membership.missing_peers(), self._peer_timeout_s)
                return

    def _dial(self, peer: int, on_connection_lost: Callable[[int, BaseException], None]) -> PeerConnection:
        """A stream (and control channel) to a higher peer on a fresh channel."""
        return PeerConnection(str(self.addresses[peer]), self.index, peer, self._token, self._tls,
                              member_key=self._member_key, on_frame=self.network.on_frame,
                              on_connection_lost=on_connection_lost)

    def _peer_stream_accepted(self, link: FrameLink) -> None:
        """A lower peer's stream arrived (authenticated): it joins, with a fresh control channel."""
        peer = link.peer_index
        if not 0 <= peer < self.index or self.stopped.is_set():
            return  # a higher index never dials down: such a stream is served, never joined
        control = PeerConnection(str(self.addresses[peer]), self.index, peer, self._token, self._tls,
                                 member_key=self._member_key, open_stream=False)
        if not self.membership.joined(peer, link, control):
            control.close()

    def _peer_stream_lost(self, link: FrameLink, error: BaseException) -> None:
        if self.membership.lost(link.peer_index, link, error) or isinstance(error, ConnectionError):
            return
        # A stream that is not the member's joined one sent what its reader refused (say, an
        # authenticated member's garbage): the frames it delivered may have reached executions.
        log.warning("member %d closed a stream of member %d that sent a bad frame: %s", self.index,
                    link.peer_index, error)
        self.network.on_connection_lost(link.peer_index, error)

    def _member_joined(self, peer: int) -> None:
        """Under the membership lock: ``peer`` joined (at start, or again after a loss)."""
        self._departed.discard(peer)
        joins = self.membership.joins[peer]
        log.info("member %d: member %d (%s) %s", self.index, peer, self.addresses[peer],
                 "joined" if joins == 1 else f"rejoined (join {joins})")
        if self.connected.is_set():
            log.info("member %d connected to all %d other members", self.index, self.member_count - 1)
        on_member_joined = getattr(self.coordinator, "on_member_joined", None)
        if on_member_joined is not None:
            on_member_joined(peer)

    def cluster_ready(self, wait_s: float = 0.0) -> bool:
        """Whether every member is connected to every other (asks them; member 0's view), waiting
        up to ``wait_s`` for it: for this member's own connections, then for every other member's
        at once, each answering as soon as it is connected (nobody polls)."""
        deadline = time.monotonic() + wait_s
        if not self.connected.wait(wait_s):
            return False
        connections = list(self.connections.values())
        if not connections:
            return True
        remaining = max(0.0, deadline - time.monotonic())
        payload = messages.encode_message({"wait_s": remaining} if remaining else {})
        with ThreadPoolExecutor(max_workers=len(connections), thread_name_prefix="jet-ready") as pool:
            # All at once: k - 1 round trips one after another would make start-up grow with k.
            pings = [pool.submit(connection.control, messages.PING, payload, 5.0 + remaining, wait_for_ready=False)
                     for connection in connections]
            try:
                return all(messages.decode_message(ping.result())[0].get("connected") for ping in pings)
            except Exception:  # noqa: BLE001 - not reachable means not ready
                return False

    def wait_until_cluster_ready(self, timeout_s: float) -> None:
        """Wait until :meth:`cluster_ready`; ``TimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while not self.cluster_ready(min(messages.READY_WAIT_SLICE_S, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() > deadline or self.stopped.is_set():
                raise TimeoutError(f"the cluster of {self.member_count} members was not ready within {timeout_s} s")
            time.sleep(0.01)  # a peer that was not reachable: do not spin on its refusals

    def stop(self) -> None:
        """Cancel running executions, close the streams and servers, stop the worker threads."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.server.stop_accepting_members()
        log.info("member %d shutting down", self.index)
        if self.coordinator is not None:  # first: its jobs stay as they are in the store, to be resumed
            self.coordinator.shutdown()
        with self._lock:
            executions = list(self.executions.values())
        for execution in executions:
            execution.cancel("the member is shutting down")
        self._say_leaving()
        self._heartbeats.stop()
        self.membership.close()
        self.http.stop()
        self.server.stop(1.0)
        self.network.stop()
        self.calls.close()
        self.service.shutdown()

    def _say_leaving(self) -> None:
        """Tell every connected peer this member is stopping, so its streams closing is expected
        there (best effort: a peer that does not answer at once will log the loss instead)."""
        for peer in self.membership.joined_peers():
            connection = self.connections[peer]
            try:
                connection.control(messages.LEAVING, messages.encode_message({}), LEAVING_NOTICE_TIMEOUT_S,
                                   wait_for_ready=False)
            except Exception as error:  # noqa: BLE001 - it is going away anyway
                log.debug("member %d could not tell member %d it is leaving: %s", self.index, peer, error)

    # -- data and control plumbing --------------------------------------------------------------
    def _send_frame(self, peer: int, frame: bytes) -> None:
        if peer < 0:  # a client (a Spark task or driver): its reply goes back over the stream it opened
            self.server.send(peer, frame)
        else:
            self.membership.send(peer, frame)

    def call_member(self, member: int, msg_type: str, payload: bytes, timeout_s: float) -> bytes:
        """A control call to ``member`` over the stream with it; a call to this member is handled
        in place."""
        if member == self.index:
            return self._handle(Caller(self.index), msg_type, payload)
        return self.calls.call(member, msg_type, payload, timeout_s)

    def start_call(self, member: int, msg_type: str, payload: bytes, timeout_s: float) -> Future:
        """:meth:`call_member` without waiting: the future of its reply (a call to this member
        runs on the call handlers' pool)."""
        if member == self.index:
            return self.calls.run_here(self._handle, Caller(self.index), msg_type, payload)
        return self.calls.start(member, msg_type, payload, timeout_s)

    def _connection_lost(self, peer: int, error: BaseException) -> None:
        """A client's stream ended (members' streams go through the membership)."""
        log.debug("Spark peer %d closed its stream: %s", peer, error)

    def _member_lost(self, peer: int, error: BaseException) -> None:
        """Under the membership lock: the stream with ``peer`` broke or went silent."""
        if peer in self._departed:
            log.log(logging.DEBUG if self.stopped.is_set() else logging.INFO,
                    "member %d: member %d has left the cluster", self.index, peer)
            # The cause a restarted job shows (JetJob status, /job), rather than gRPC's CANCELLED.
            error = ConnectionError(f"member {peer} stopped (it said it was leaving)")
        else:
            log.log(logging.DEBUG if self.stopped.is_set() else logging.WARNING,
                    "member %d lost its connection with member %d: %s", self.index, peer, error)
        self.calls.peer_lost(peer, error)
        if self.stopped.is_set():
            return  # this member's executions were cancelled when it began to stop
        if self.coordinator is not None:  # first: the cause, before the failures it brings
            self.coordinator.on_member_lost(peer, error)
        self.network.on_connection_lost(peer, error)

    def _on_control(self, caller: Caller, msg_type: str, payload: bytes) -> bytes:
        return self._handle(caller, msg_type, payload)

    def _on_client_frame(self, client: int, frame: bytes) -> None:
        """A frame on a client's (a Spark task's) stream: never one of the members' data frames."""
        kind = frame_type(frame)
        if kind in _MEMBER_FRAME_TYPES:
            raise PermissionError(f"a client (index {client}) sent a {kind.name} frame; only members send those")
        self.network.on_frame(client, frame)

    def _handle(self, caller: Caller, msg_type: str, payload: bytes) -> bytes:
        entry = self._HANDLERS.get(msg_type)
        if entry is None:
            raise ValueError(f"unknown control message {msg_type!r}; known: {', '.join(self._HANDLERS)}")
        handler, allowed = entry
        if caller.role not in allowed:
            senders = " or ".join(_ROLE_NAMES[role] for role in Role if role in allowed) or "nobody"
            raise PermissionError(f"control message {msg_type!r} is accepted from {senders} only; "
                                  f"refused to {caller}")
        header, blob = messages.decode_message(payload)
        reply = handler(self, caller.index, header, blob) or {}
        return messages.encode_message(*reply) if isinstance(reply, tuple) else messages.encode_message(reply)

    # -- handlers: every member ------------------------------------------------------------------
    def _ping(self, peer: int, header: dict, blob: bytes) -> dict:
        wait_s = header.get("wait_s", 0.0)
        if type(wait_s) not in (int, float) or wait_s < 0:
            raise ValueError(f"ping's wait_s must be a number of seconds >= 0, got {wait_s!r}")
        wait_s = min(float(wait_s), MAX_WAIT_S)
        cluster_ready = self.cluster_ready(wait_s) if header.get("cluster") else None
        if wait_s and cluster_ready is None:
            self.connected.wait(wait_s)
        reply: dict[str, Any] = {"member": self.index, "members": self.member_count,
                                 "connected": self.connected.is_set(), "joined": self.membership.joined_peers()}
        if cluster_ready is not None:
            reply["cluster_ready"] = cluster_ready
        if header.get("load"):
            reply["load"] = process_load(len(self.executions))  # the dashboard's cluster page
        return reply

    def _leaving(self, peer: int, header: dict, blob: bytes) -> dict:
        self._departed.add(peer)
        return {}

    def _init(self, peer: int, header: dict, blob: bytes) -> dict:
        message = PlanMessage.from_header(header)
        if message.member_index != self.index or message.member_count != self.member_count:
            raise ValueError(f"init for member {message.member_index} of {message.member_count} reached "
                             f"member {self.index} of {self.member_count}")
        # A member that rejoined the coordinator may not have rejoined this one yet, and senders to
        # it would fail at once: wait for it, within half of the coordinator's deadline for init.
        control = self.settings.control
        wait_s = min(control.member_rejoin_timeout_ms, control.init_timeout_ms / 2) / 1000
        members = range(self.member_count) if message.members is None else message.members
        missing = self.membership.wait_joined(members, wait_s)
        if missing:
            self.network.discard(message.execution_id)
            raise ConnectionError(f"member {self.index} has no stream to members {missing} of execution "
                                  f"{message.execution_id} after waiting {wait_s:g} s for them to rejoin")
        try:
            execution = JobExecution(message, blob, network=self.network, service=self.service,
                                     on_done=self._report, edge_defaults=self.edge_defaults,
                                     flow_control_period_ms=self.settings.flow_control_period_ms,
                                     publish_observable=self._publish_observable,
                                     progress_log_interval_ms=self.settings.progress_log_interval_ms,
                                     snapshot_store=self.snapshot_store)
        except Exception as e:  # the user's supplier or an unpicklable DAG: the traceback goes to the job
            self.network.discard(message.execution_id)
            raise JobInitError(f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
        with self._lock:
            closed = self.network.has_ended(message.execution_id)  # cancelled while its init ran
            if message.execution_id in self.executions:
                raise ValueError(f"execution {message.execution_id} is already initialised on member {self.index}")
            if not closed:
                self.executions[message.execution_id] = execution
        if closed:  # the coordinator gave up on this init (its deadline passed) and cancelled it
            execution.cleanup()
            raise JobCancelledError(f"execution {message.execution_id} of job {message.job_id} was cancelled on "
                                    f"member {self.index} before its init finished")
        log.info("job %s: execution %d initialised on member %d", message.job_id,
                 message.execution_id, self.index)
        # It starts at once, with no round of its own: a peer's frames that come before its own
        # init are held by the network until it registers.
        self.metrics.running.inc()
        execution.start()
        return {}

    def _execution(self, header: dict) -> JobExecution:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.get(execution_id)
        if execution is None:
            raise KeyError(f"no execution {execution_id} on member {self.index}")
        return execution

    def _cancel(self, peer: int, header: dict, blob: bytes) -> dict:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.get(execution_id)
            if execution is None:  # its init failed or still runs here (it must not start), or it ended
                self.network.discard(execution_id)
                return {}
        origin = header.get("member")
        if header.get("by_client"):
            log.info("job %s: cancelled by the client", execution.job_id)
            execution.cancel("cancelled by the client")
            return {}
        if header.get("restarting"):
            log.warning("job %s: execution %d is cancelled to be restarted: %s", execution.job_id,
                        execution.execution_id, header.get("reason", ""))
            execution.cancel(f"restarting after: {header.get('reason', '')}")
            return {}
        if origin != self.index:
            log.error("job %s fails everywhere: the coordinator cancels it after a failure on member %s:\n%s",
                      execution.job_id, origin, header.get("reason", ""))
        execution.cancel(f"failure on member {origin}")
        return {}

    def _complete(self, peer: int, header: dict, blob: bytes) -> dict:
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:
            execution = self.executions.pop(execution_id, None)
            self._undelivered.pop(execution_id, None)
            if execution is None:
                self.network.discard(execution_id)
        if execution is not None:
            execution.cleanup()
        return {}

    def _snapshot_phase1(self, peer: int, header: dict, blob: bytes) -> dict:
        """Save this member's state of the execution into the snapshot's slot; its figures, or
        ``error`` (a failed snapshot is the coordinator's to report, not this member's)."""
        execution = self._execution(header)
        snapshot_id = messages.require(header, "snapshot_id", int)
        try:
            if self._take_fault("fail_snapshot_phase1"):
                raise SnapshotError(f"fault injection: member {self.index} fails phase 1 of snapshot {snapshot_id}")
            return execution.snapshot_phase1(snapshot_id, messages.require(header, "slot", int),
                                             bool(header.get("terminal")), float(header.get("timeout_s", 60.0)))
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, which logs the failed snapshot
            log.info("job %s: phase 1 of snapshot %d failed on member %d: %s", execution.job_id, snapshot_id,
                     self.index, e)
            return {"error": f"{type(e).__name__}: {e}"}

    def _snapshot_phase2(self, peer: int, header: dict, blob: bytes) -> dict:
        """Every live processor commits (or forgets) the snapshot's prepared work; ``error`` when not."""
        execution = self._execution(header)
        try:
            execution.snapshot_phase2(messages.require(header, "snapshot_id", int), bool(header.get("success")),
                                      float(header.get("timeout_s", 60.0)))
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, which logs it
            return {"error": f"{type(e).__name__}: {e}"}
        return {}

    def _execution_metrics(self, peer: int, header: dict, blob: bytes) -> dict:
        execution = self._execution(header)
        if header.get("measurements"):
            return {"measurements": execution.packed_measurements()}
        return {"metrics": execution.figures()}

    def _execution_state(self, peer: int, header: dict, blob: bytes) -> dict | tuple[dict, bytes]:
        """The coordinator asks after an execution it heard nothing from: still running, or
        finished with this report (the one that may have been lost)."""
        if self._take_fault("unanswered_state_queries"):
            self.stopped.wait(self.settings.control.control_timeout_ms / 1000 + 1.0)
            raise TimeoutError(f"fault injection: member {self.index} left a state query unanswered")
        execution_id = messages.require(header, "execution_id", int)
        with self._lock:  # an answer the coordinator does not get fails this member there, named
            report = self._undelivered.pop(execution_id, None)
        if report is None:
            report = self._execution(header).report
        if report is None:
            return {"state": EXECUTION_RUNNING_STATE}
        return {**report[0], "state": EXECUTION_DONE_STATE}, report[1]

    def _take_fault(self, fault: str) -> bool:
        with self._lock:
            if self._faults[fault] <= 0:
                return False
            self._faults[fault] -= 1
            return True

    def _report(self, outcome: ExecutionOutcome, execution: JobExecution) -> None:
        """On the execution's report thread: count it, then send its report to the coordinator."""
        self.metrics.running.dec()
        self.metrics.executions.labels("completed" if outcome.ok else "cancelled" if outcome.cancelled
                                       else "failed").inc()
        if not outcome.ok and self.stopped.is_set():
            # Cancelled because this member stops (a pod deleted): the coordinator counts the
            # member lost and restarts the job; a report would read as the job's own failure.
            log.debug("member %d is stopping; the cancellation of job %s is not reported", self.index,
                      outcome.job_id)
            return
        if outcome.cleaned_up:
            # Its report stays until delivered, for the coordinator's question after a lost one.
            with self._lock:
                self.executions.pop(execution.execution_id, None)
                self._undelivered[execution.execution_id] = execution.report
            execution.cleanup()
        # Sent from this report thread itself: one hand-over between threads per job, not two.
        self._send_report(outcome, execution.report_payload(), execution.execution_id)

    def _send_report(self, outcome: ExecutionOutcome, payload: bytes, execution_id: int) -> None:
        """Send an end report, retrying with backoff for ``report_retry_ms``; after that the
        coordinator asks for it (it stays in the execution, or in ``_undelivered``, until cleanup)."""
        retry_s = self.settings.control.report_retry_ms / 1000
        deadline = time.monotonic() + retry_s
        backoff_s, attempt = REPORT_FIRST_BACKOFF_S, 0
        while True:
            attempt += 1
            try:
                if self._take_fault("drop_reports"):
                    raise ConnectionError("fault injection: the report was dropped")
                if self.index == 0:
                    self._handle(Caller(0), messages.EXECUTION_DONE, payload)
                else:  # no answer is needed: see stream_calls
                    self.calls.notify(0, messages.EXECUTION_DONE, payload)
                with self._lock:
                    self._undelivered.pop(execution_id, None)
                return
            except Exception as e:  # noqa: BLE001 - retried; the coordinator asks after it anyway
                remaining = deadline - time.monotonic()
                if self.stopped.is_set():
                    # The whole member is going away (its cluster is shutting down, or it was
                    # told to stop): the coordinator counts it lost, which is not an error here.
                    log.info("member %d is stopping; the end of job %s was not reported: %s",
                             self.index, outcome.job_id, e)
                    return
                if remaining <= 0:
                    log.error("member %d could not report the end of job %s to the coordinator in %d attempts "
                              "over %.1f s: %s", self.index, outcome.job_id, attempt, retry_s, e)
                    return
                log.warning("member %d: report of job %s failed (attempt %d), retrying in %.2f s: %s",
                            self.index, outcome.job_id, attempt, min(backoff_s, remaining), e)
                self.stopped.wait(min(backoff_s, remaining))
                backoff_s = min(backoff_s * 2, REPORT_MAX_BACKOFF_S)

    # -- handlers: the coordinator ---------------------------------------------------------------
    def _require_coordinator(self) -> JobCoordinator:
        if self.coordinator is None:
            raise PermissionError(f"member {self.index} is not the coordinator; send jobs to member 0")
        return self.coordinator

    def _submit(self, peer: int, header: dict, blob: bytes) -> dict:
        coordinator = self._require_coordinator()
        try:
            return {"job_id": coordinator.submit(blob, header.get("config"))}
        except (DagValidationError, JobConfigError) as e:
            return {"error": type(e).__name__, "message": str(e)}

    def submit(self, dag: DAG, config: dict | None = None) -> str:
        """Submit a job on the coordinator from inside its own process (``--pipeline``); a job of
        the same name kept unfinished in the snapshot store goes on instead."""
        return self._require_coordinator().submit_or_resume(cloudpickle.dumps(dag), config)

    def resume_stored_jobs(self) -> list[str]:
        """Member 0: take over the unfinished jobs recorded in the snapshot store."""
        return self._require_coordinator().resume_stored_jobs()

    def reject(self, name: str, error: BaseException) -> str:
        """Record a ``--pipeline`` job that could not be built as FAILED (see JobCoordinator.reject)."""
        return self._require_coordinator().reject(name, error)

    def _job_status(self, peer: int, header: dict, blob: bytes) -> dict:
        """A job's record by its id (``job_id``), or by its id or name (``job``)."""
        coordinator = self._require_coordinator()
        if "job" in header:
            return coordinator.find(messages.require(header, "job", str)).to_header()
        return coordinator.record(messages.require(header, "job_id", str)).to_header()

    def _job_control(self, peer: int, header: dict, blob: bytes) -> dict:
        """suspend, resume, restart, export_snapshot or cancel_and_export; a request the job's
        state does not allow is answered with ``error`` (the client raises it)."""
        coordinator = self._require_coordinator()
        job_id, action = messages.require(header, "job_id", str), messages.require(header, "action", str)
        try:
            if action in _EXPORTS:
                return {"snapshot": coordinator.export_snapshot(job_id, messages.require(header, "name", str),
                                                                cancel=action == "cancel_and_export")}
            operation = {"suspend": coordinator.suspend, "resume": coordinator.resume,
                         "restart": coordinator.restart}.get(action)
            if operation is None:
                raise ValueError(f"job_control: unknown action {action!r}; known: suspend, resume, restart, "
                                 f"{', '.join(_EXPORTS)}")
            return operation(job_id).to_header()
        except (JobStateError, SnapshotError, ValueError) as e:
            return {"error": type(e).__name__, "message": str(e)}

    def _list_jobs(self, peer: int, header: dict, blob: bytes) -> dict:
        return {"jobs": self._require_coordinator().job_headers()}

    def _list_snapshots(self, peer: int, header: dict, blob: bytes) -> dict:
        return {"snapshots": self._require_coordinator().snapshots()}

    def _job_wait(self, peer: int, header: dict, blob: bytes) -> dict:
        timeout_s = min(float(header.get("timeout_s", MAX_WAIT_S)), MAX_WAIT_S)
        return self._require_coordinator().wait(messages.require(header, "job_id", str), timeout_s).to_header()

    def _cancel_job(self, peer: int, header: dict, blob: bytes) -> dict:
        return self._require_coordinator().cancel(messages.require(header, "job_id", str)).to_header()

    def _execution_done(self, peer: int, header: dict, blob: bytes) -> dict:
        outcome = ExecutionOutcome.from_header(header)
        if peer not in (outcome.member, 0) or peer >= self.member_count:
            raise PermissionError(f"member {peer} reported the outcome of member {outcome.member}")
        self._require_coordinator().on_execution_done(*decode_report(header, blob))
        return {}

    def _job_metrics(self, peer: int, header: dict, blob: bytes) -> dict:
        job_id = messages.require(header, "job_id", str)
        if header.get("measurements"):
            return {"measurements": pack_measurements(self._require_coordinator().measurements(job_id))}
        return {"metrics": self._require_coordinator().metrics(job_id)}

    def _job_results(self, peer: int, header: dict, blob: bytes) -> tuple[dict, bytes]:
        results = self._require_coordinator().results(messages.require(header, "job_id", str))
        return {}, cloudpickle.dumps(results)

    def _publish_observable(self, job_id: str, name: str, capacity: int, items: list) -> None:
        """An observable sink's items on this member go to member 0 (in place on member 0 itself)."""
        if self.coordinator is not None:
            self.coordinator.observable_publish(job_id, name, capacity, items)
            return
        payload = messages.encode_message({"job_id": job_id, "name": name, "capacity": capacity},
                                          cloudpickle.dumps(items))
        self.call_member(0, messages.OBSERVABLE_ITEMS, payload, self.settings.control.control_timeout_ms / 1000)

    def _observable_items(self, peer: int, header: dict, blob: bytes) -> dict:
        items = cloudpickle.loads(blob) if blob else []  # from an authenticated member
        self._require_coordinator().observable_publish(
            messages.require(header, "job_id", str), messages.require(header, "name", str),
            messages.require(header, "capacity", int), items)
        return {}

    def _observable_read(self, peer: int, header: dict, blob: bytes) -> tuple[dict, bytes]:
        wait_s = min(float(header.get("wait_s", READ_WAIT_S)), MAX_WAIT_S)
        max_items = max(1, min(int(header.get("max_items", READ_MAX_ITEMS)), READ_MAX_ITEMS))
        from_sequence = messages.require(header, "from", int)
        if from_sequence < 0:
            raise PacketFormatError(f"observable_read: 'from' must be a sequence number >= 0, got {from_sequence}")
        try:
            items, reply = self._require_coordinator().observable_read(
                messages.require(header, "job_id", str), messages.require(header, "name", str),
                from_sequence, max_items, wait_s)
        except UnknownObservableError as e:
            return {"error": type(e).__name__, "message": str(e)}, b""
        return reply, cloudpickle.dumps(items) if items else b""

    def _latest_job(self) -> dict | None:
        record = self.coordinator.latest() if self.coordinator else None
        return None if record is None else record.to_header()

    def _count_job(self, record: JobRecord) -> None:
        if record.status is JobStatus.NOT_RUNNING and record.start_time is None:
            self.metrics.jobs_submitted.inc()
        elif record.status is JobStatus.COMPLETED:
            self.metrics.jobs_completed.inc()
        elif record.status is JobStatus.FAILED:
            self.metrics.jobs_failed.inc()

    _HANDLERS: dict[str, tuple[Callable[["Member", int, dict, bytes], dict | tuple[dict, bytes] | None],
                               frozenset[Role]]] = {
        # The coordinator drives executions.
        messages.INIT: (_init, COORDINATOR_ONLY),
        messages.CANCEL: (_cancel, COORDINATOR_ONLY), messages.COMPLETE: (_complete, COORDINATOR_ONLY),
        messages.EXECUTION_METRICS: (_execution_metrics, COORDINATOR_ONLY),
        messages.EXECUTION_STATE: (_execution_state, COORDINATOR_ONLY),
        messages.SNAPSHOT_PHASE1: (_snapshot_phase1, COORDINATOR_ONLY),
        messages.SNAPSHOT_PHASE2: (_snapshot_phase2, COORDINATOR_ONLY),
        # Members tell each other (and the coordinator) about themselves.
        messages.EXECUTION_DONE: (_execution_done, MEMBERS), messages.LEAVING: (_leaving, MEMBERS),
        messages.OBSERVABLE_ITEMS: (_observable_items, MEMBERS),
        # Clients (and members) submit and follow jobs.
        messages.PING: (_ping, ANYONE), messages.SUBMIT: (_submit, ANYONE),
        messages.JOB_STATUS: (_job_status, ANYONE), messages.JOB_WAIT: (_job_wait, ANYONE),
        messages.CANCEL_JOB: (_cancel_job, ANYONE), messages.JOB_METRICS: (_job_metrics, ANYONE),
        messages.JOB_RESULTS: (_job_results, ANYONE), messages.OBSERVABLE_READ: (_observable_read, ANYONE),
        messages.JOB_CONTROL: (_job_control, ANYONE), messages.LIST_JOBS: (_list_jobs, ANYONE),
        messages.LIST_SNAPSHOTS: (_list_snapshots, ANYONE),
    }
    """Each control message's handler and the roles that may send it."""


_EXPORTS = ("export_snapshot", "cancel_and_export")
_MEMBER_FRAME_TYPES = frozenset({FrameType.CHUNK, FrameType.ACK, FrameType.DONE_REPORT, FrameType.DONE_NOTICE,
                                 FrameType.CONTROL_CALL, FrameType.CONTROL_REPLY})
_ROLE_NAMES = {Role.COORDINATOR: "the coordinator (member 0)", Role.MEMBER: "other members",
               Role.CLIENT: "clients"}
