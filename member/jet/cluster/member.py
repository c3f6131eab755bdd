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
import os
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from typing import Any, Callable

import cloudpickle

from jet.cluster.coordination.coordinator import JobCoordinator, JobRecord, JobStatus
from jet.cluster.coordination.job_store import JobStore
from jet.cluster.edges.network import MemberNetwork
from jet.cluster.execution_handlers import MemberExecutions
from jet.cluster.job_handlers import MAX_WAIT_S, JobApi
from jet.cluster.links import messages
from jet.cluster.links.auth import ANYONE, COORDINATOR_ONLY, MEMBER_KEY_ENV, MEMBER_KEY_FILE_ENV, MEMBERS, Caller, Role
from jet.cluster.links.errors import LinkError
from jet.cluster.links.heartbeat import HeartbeatMonitor, check_heartbeat_settings
from jet.cluster.links.membership import Membership, PeerDialer
from jet.cluster.links.packets import FrameType, PacketFormatError, frame_type
from jet.cluster.links.peers import PeerAddress, parse_peers
from jet.cluster.links.server_limits import MEMBER_CALL_THREADS, ServerLimits
from jet.cluster.links.stream_calls import StreamCalls
from jet.cluster.links.transport import FrameLink, MemberServer, PeerConnection, serve_control
from jet.cluster.member_http import MemberHttpServer, MemberMetrics
from jet.cluster.settings import MemberSettings
from jet.core.dag import DAG
from jet.core.edge import EdgeConfig
from jet.dashboard.api import DashboardApi
from jet.dashboard.load import process_load
from jet.execution.runner import default_cooperative_threads
from jet.execution.service import TaskletExecutionService
from jet.snapshot import SnapshotStore

log = logging.getLogger("jet.cluster.member")

PEER_TIMEOUT_S = 300.0
START_POLL_S = 0.2
"""How often a starting member looks whether it was stopped while it waits for its peers."""
LEAVING_NOTICE_TIMEOUT_S = 1.0
"""How long a stopping member waits for each peer to take its notice that it is leaving."""


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
        # Read once: a job's code runs in this process, and its subprocesses inherit the
        # environment; neither should find the key there (docs/security.md says what remains).
        for variable in (MEMBER_KEY_ENV, MEMBER_KEY_FILE_ENV):
            os.environ.pop(variable, None)
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
        self.stopped = threading.Event()
        self.execution_handlers = MemberExecutions(
            index, self.member_count, settings, membership=self.membership, network=self.network,
            service=self.service, edge_defaults=self.edge_defaults, snapshot_store=self.snapshot_store,
            metrics=self.metrics, stopped=self.stopped, send_to_coordinator=self._send_to_coordinator,
            publish_observable=self._publish_observable)
        """The coordinator's calls about this member's executions, and their end reports."""
        self.executions = self.execution_handlers.executions
        """The executions running here, by id."""
        self.job_api = JobApi(index, self.member_count, self.coordinator)
        """The job handlers of member 0 (another member refuses them)."""
        self._handlers = self._handler_table()
        self.metrics.watch_executions(lambda: list(self.executions.values()))
        if self.coordinator is not None:
            self.metrics.watch_jobs(self.coordinator.records)
        self._lock = threading.Lock()
        self.connected = self.membership.all_joined
        """Set while the streams with every other member are up."""

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
            error = LinkError(f"member {peer} stopped (it said it was leaving)")
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
        entry = self._handlers.get(msg_type)
        if entry is None:
            raise PacketFormatError(f"unknown control message {msg_type!r}; known: {', '.join(self._handlers)}")
        handler, allowed = entry
        if caller.role not in allowed:
            senders = " or ".join(_ROLE_NAMES[role] for role in Role if role in allowed) or "nobody"
            raise PermissionError(f"control message {msg_type!r} is accepted from {senders} only; "
                                  f"refused to {caller}")
        header, blob = messages.decode_message(payload)
        reply = handler(caller.index, header, blob) or {}
        return messages.encode_message(*reply) if isinstance(reply, tuple) else messages.encode_message(reply)

    # -- handlers: every member ------------------------------------------------------------------
    def _ping(self, peer: int, header: dict, blob: bytes) -> dict:
        wait_s = header.get("wait_s", 0.0)
        if type(wait_s) not in (int, float) or wait_s < 0:
            raise PacketFormatError(f"ping's wait_s must be a number of seconds >= 0, got {wait_s!r}")
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

    # -- the coordinator's jobs from inside this process (see JobApi for clients') ---------------
    def submit(self, dag: DAG, config: dict | None = None) -> str:
        """Submit a job on the coordinator from inside its own process (``--pipeline``); a job of
        the same name kept unfinished in the snapshot store goes on instead."""
        return self.job_api.require_coordinator().submit_or_resume(cloudpickle.dumps(dag), config)

    def resume_stored_jobs(self) -> list[str]:
        """Member 0: take over the unfinished jobs recorded in the snapshot store."""
        return self.job_api.require_coordinator().resume_stored_jobs()

    def reject(self, name: str, error: BaseException) -> str:
        """Record a ``--pipeline`` job that could not be built as FAILED (see JobCoordinator.reject)."""
        return self.job_api.require_coordinator().reject(name, error)

    def _publish_observable(self, job_id: str, name: str, capacity: int, items: list) -> None:
        """An observable sink's items on this member go to member 0 (in place on member 0 itself)."""
        if self.coordinator is not None:
            self.coordinator.observable_publish(job_id, name, capacity, items)
            return
        payload = messages.encode_message({"job_id": job_id, "name": name, "capacity": capacity},
                                          cloudpickle.dumps(items))
        self.call_member(0, messages.OBSERVABLE_ITEMS, payload, self.settings.control.control_timeout_ms / 1000)

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

    def _send_to_coordinator(self, msg_type: str, payload: bytes) -> None:
        """A message member 0 needs no answer to: in place on member 0 itself, else over the
        stream (see :mod:`jet.cluster.links.stream_calls`)."""
        if self.index == 0:
            self._handle(Caller(0), msg_type, payload)
        else:
            self.calls.notify(0, msg_type, payload)

    def _handler_table(self) -> dict[str, tuple[Handler, frozenset[Role]]]:
        """Each control message's handler and the roles that may send it."""
        executions, jobs = self.execution_handlers, self.job_api
        return {
            # The coordinator drives executions.
            messages.INIT: (executions.init, COORDINATOR_ONLY),
            messages.CANCEL: (executions.cancel, COORDINATOR_ONLY),
            messages.COMPLETE: (executions.complete, COORDINATOR_ONLY),
            messages.EXECUTION_METRICS: (executions.execution_metrics, COORDINATOR_ONLY),
            messages.EXECUTION_STATE: (executions.execution_state, COORDINATOR_ONLY),
            messages.SNAPSHOT_PHASE1: (executions.snapshot_phase1, COORDINATOR_ONLY),
            messages.SNAPSHOT_PHASE2: (executions.snapshot_phase2, COORDINATOR_ONLY),
            # Members tell each other (and the coordinator) about themselves.
            messages.EXECUTION_DONE: (jobs.execution_done, MEMBERS), messages.LEAVING: (self._leaving, MEMBERS),
            messages.OBSERVABLE_ITEMS: (jobs.observable_items, MEMBERS),
            # Clients (and members) submit and follow jobs.
            messages.PING: (self._ping, ANYONE), messages.SUBMIT: (jobs.submit, ANYONE),
            messages.JOB_STATUS: (jobs.job_status, ANYONE), messages.JOB_WAIT: (jobs.job_wait, ANYONE),
            messages.CANCEL_JOB: (jobs.cancel_job, ANYONE), messages.JOB_METRICS: (jobs.job_metrics, ANYONE),
            messages.JOB_RESULTS: (jobs.job_results, ANYONE), messages.OBSERVABLE_READ: (jobs.observable_read, ANYONE),
            messages.JOB_CONTROL: (jobs.job_control, ANYONE), messages.LIST_JOBS: (jobs.list_jobs, ANYONE),
            messages.LIST_SNAPSHOTS: (jobs.list_snapshots, ANYONE),
            messages.DELETE_SNAPSHOT: (jobs.delete_snapshot, ANYONE),
        }


Handler = Callable[[int, dict, bytes], dict | tuple[dict, bytes] | None]
"""A control message's handler: ``(caller index, header, blob) -> reply``."""
_MEMBER_FRAME_TYPES = frozenset({FrameType.CHUNK, FrameType.ACK, FrameType.DONE_REPORT, FrameType.DONE_NOTICE,
                                 FrameType.CONTROL_CALL, FrameType.CONTROL_REPLY})
_ROLE_NAMES = {Role.COORDINATOR: "the coordinator (member 0)", Role.MEMBER: "other members",
               Role.CLIENT: "clients"}
