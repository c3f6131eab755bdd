"""The embedded local cluster: N ``jet member`` processes on this machine.

    with jet.local_cluster(members=3) as cluster:
        cluster.new_job(dag).join()

Members listen on loopback on free ports, share a random cluster token (``$JET_CLUSTER_TOKEN``),
which this side's client and Spark side use too, a random member key (``$JET_MEMBER_KEY``), which
only the member processes get, and a static peer list. They die with this process, even when it is SIGKILLed: each member arms
``PR_SET_PDEATHSIG`` and exits when its stdin, a pipe from here, closes. The death signal follows
the *thread* that started the members, so start a cluster from a thread that outlives it.
Settings overrides (``flow_control_period_ms=50``, ``queue_size=256``, ...) reach the members as
``JET_*`` environment variables.

A member process that dies (killed, crashed) is started again with the same index, ports and
environment, its output appended to the same log, and rejoins the cluster by itself
(:mod:`jet.cluster.local.member_supervisor`; ``restart_dead_members=False`` turns it off). Its ports are
free again at once: the gRPC server binds with ``SO_REUSEADDR`` (gRPC sets it on every listening
socket) and the HTTP server too, so the dead member's connections in TIME_WAIT do not block them,
while ``SO_REUSEPORT`` stays off (``grpc.so_reuseport=0``), so a port still held by a live process
fails the bind instead of being shared.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from jet.cluster.client import JetClient, Job
from jet.cluster.links.auth import MEMBER_KEY_ENV, TOKEN_ENV
from jet.cluster.links.messages import READY_WAIT_SLICE_S
from jet.cluster.links.peers import PeerAddress, tcp_probe
from jet.cluster.local import forked_members
from jet.cluster.local.member_supervisor import MemberSupervisor
from jet.cluster.settings import MemberSettings

READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
_SOURCE_ROOT = str(Path(__file__).resolve().parents[3])  # member/, the source root of jet


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` right now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _python_path() -> str:
    """This process's import path, so members import whatever the job's pickles refer to."""
    entries = [_SOURCE_ROOT, os.getcwd()] + [p for p in sys.path if p and Path(p).is_dir()]
    return os.pathsep.join(dict.fromkeys(entries))


class LocalCluster:
    """N member processes on loopback and a client of member 0."""

    def __init__(self, members: int = 2, threads: int | None = None, *, log_dir: str | os.PathLike | None = None,
                 log_level: str = "INFO", ready_timeout_s: float = READY_TIMEOUT_S,
                 member_env: Sequence[Mapping[str, str]] | None = None, restart_dead_members: bool = True,
                 token: str | None = None, **settings: Any) -> None:
        """``member_env[i]``: environment variables for member i only (say, its ``PYTHONHASHSEED``);
        ``restart_dead_members``: start a member that dies again (see the module's docstring);
        ``token``: the cluster token (a random one by default)."""
        if members < 1:
            raise ValueError(f"local_cluster(members=...) must be >= 1, got {members}")
        if member_env is not None and len(member_env) != members:
            raise ValueError(f"member_env needs one mapping per member ({members}), got {len(member_env)}")
        # Validates the names and values; TLS settings also secure this side's client.
        self.tls = MemberSettings.load({**settings, "cooperative_threads": threads}, environ={}).tls_config()
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self.member_key = secrets.token_urlsafe(32)
        """Only the member processes get it (tests use it to play a member); never clients or Spark."""
        self.host = "127.0.0.1"
        # Every listening port picked before any member starts: a member binding "any free port"
        # could take one meant for a member still starting.
        ports = free_ports(3 * members, self.host)
        self.ports, self.http_ports, self.link_ports = ports[:members], ports[members:2 * members], ports[2 * members:]
        self.addresses = [f"{self.host}:{port}" for port in self.ports]
        self.log_paths: list[Path] = []
        self.members: list[subprocess.Popen] = []
        """The current process of each member (replaced when one is restarted)."""
        self._client: JetClient | None = None
        self._supervisor: MemberSupervisor | None = None
        self._threads, self._log_dir, self._log_level = threads, log_dir, log_level
        self._member_envs: list[dict[str, str]] = []
        env = {k: v for k, v in os.environ.items() if not k.startswith("JET_")}
        env.update({f"JET_{name.upper()}": str(value) for name, value in settings.items() if value is not None})
        env.update({TOKEN_ENV: self.token, MEMBER_KEY_ENV: self.member_key, "PYTHONPATH": _python_path(),
                    "PYTHONUNBUFFERED": "1"})
        try:
            for index in range(members):
                self._member_envs.append({**env, **member_env[index]} if member_env else env)
                self.members.append(self._spawn(index))
            self._wait_ready(ready_timeout_s)
            if restart_dead_members:
                self._supervisor = MemberSupervisor(self.members, lambda index, status: self._spawn(index, True)).start()
        except BaseException:
            self.close()
            raise

    def _spawn(self, index: int, restart: bool = False) -> subprocess.Popen:
        """Start member ``index`` (again, appending to its log, when ``restart``)."""
        threads, log_dir = self._threads, self._log_dir
        command = [sys.executable, "-m", "jet.cli", "--log-level", self._log_level, "member",
                   "--host", self.host, "--port", str(self.ports[index]),
                   "--http-port", str(self.http_ports[index]), "--link-port", str(self.link_ports[index]),
                   "--peers", ",".join(self.addresses),
                   "--index", str(index), "--exit-with-parent"]
        if threads:
            command += ["--threads", str(threads)]
        output = None
        if log_dir is not None:
            path = Path(log_dir) / f"member-{index}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            if not restart:
                self.log_paths.append(path)
            output = path.open("ab" if restart else "wb")
        if forked_members.available(self._member_envs[index]):
            if output is not None:
                output.close()
            path = None if log_dir is None else str(Path(log_dir) / f"member-{index}.log")
            return forked_members.ForkedMember(command, self._member_envs[index], path)
        try:
            # A session of their own: a Ctrl-C in the terminal reaches the parent only, which cancels
            # the job and stops them in order (they still die with it: --exit-with-parent).
            return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=output, stderr=output,
                                    env=self._member_envs[index], start_new_session=True)
        finally:
            if output is not None:
                output.close()

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        delay = 0.005  # a poll is one cheap call; a coarse one would add its whole period to every `jet run`
        while True:
            for index, process in enumerate(self.members):
                if process.poll() is not None:
                    raise RuntimeError(f"member {index} exited with code {process.returncode} while starting"
                                       f"{self._log_tail(index)}")
            # The client's channel dials member 0 only once its port takes connections: a dial
            # refused earlier holds the channel in gRPC's reconnect backoff (100 ms) past the
            # moment the cluster is up.
            if tcp_probe(PeerAddress(self.host, self.ports[0]), timeout_s=0.5) and self.cluster_ready(
                    wait_s=min(READY_WAIT_SLICE_S, max(0.0, deadline - time.monotonic()))):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the local cluster of {len(self.members)} members was not ready within "
                                   f"{timeout_s} s{self._log_tail(0)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _log_tail(self, index: int, lines: int = 30) -> str:
        if index >= len(self.log_paths) or not self.log_paths[index].exists():
            return ""
        tail = self.log_paths[index].read_text(errors="replace").splitlines()[-lines:]
        return "; its log ends:\n" + "\n".join(tail)

    @property
    def client(self) -> JetClient:
        """The client of member 0 (created on first use)."""
        if self._client is None:
            self._client = JetClient(self.addresses, self.token, self.tls)
        return self._client

    def new_job(self, job: Any, config: Mapping[str, Any] | None = None) -> Job:
        """Submit a ``jet.Pipeline`` or a core ``DAG`` (see :meth:`JetClient.new_job`)."""
        return self.client.new_job(job, config)

    def job(self, job_id_or_name: str) -> Job:
        """A job of this cluster by its id, or the newest of that name (see ``JetClient.job``)."""
        return self.client.job(job_id_or_name)

    def list_jobs(self) -> list[Job]:
        """Every job the coordinator keeps, oldest first."""
        return self.client.list_jobs()

    def snapshots(self) -> list[dict[str, Any]]:
        """The exported snapshots of the cluster's store (see ``JetClient.snapshots``)."""
        return self.client.snapshots()

    def delete_snapshot(self, name: str) -> None:
        """Delete an exported snapshot from the cluster's store."""
        self.client.delete_snapshot(name)

    @property
    def member_restarts(self) -> int:
        """How many member processes were restarted after they died."""
        return 0 if self._supervisor is None else self._supervisor.restarts

    def kill_member(self, index: int, signal: int = signal.SIGKILL, restart: bool = True) -> subprocess.Popen:
        """Send ``signal`` to member ``index``'s current process (for tests and chaos runs); the
        process signalled. A member that dies of it is restarted (unless that is turned off, or
        ``restart=False``: then it stays down until :meth:`restart_member`)."""
        if not 0 <= index < len(self.members):
            raise ValueError(f"kill_member: index {index} is outside the {len(self.members)} members")
        if not restart and self._supervisor is not None:
            self._supervisor.hold(index)
        process = self.members[index]
        process.send_signal(signal)
        return process

    def restart_member(self, index: int) -> None:
        """Start member ``index``, killed with ``restart=False``, again (it rejoins by itself)."""
        if self._supervisor is None:
            raise RuntimeError("restart_member needs a cluster that restarts its dead members")
        self._supervisor.release(index)

    def cluster_ready(self, timeout_s: float = 5.0, wait_s: float = 0.0) -> bool:
        """Whether every member is connected to every other (member 0's view; False when member 0
        does not answer), now or, with ``wait_s``, as soon as they are within that time."""
        try:
            return bool(self.client.ping(cluster=True, timeout_s=timeout_s, ready_wait_s=wait_s).get("cluster_ready"))
        except Exception:  # noqa: BLE001 - not up (yet)
            return False

    def close(self, wait: bool = True) -> None:
        """SIGTERM every member, SIGKILL those still running after a grace period; no orphans.

        ``wait=False`` only sends SIGTERM and returns: for a parent about to exit, whose members
        end with it anyway (they also exit when their stdin from the parent closes)."""
        if self._supervisor is not None:
            self._supervisor.stop_restarting()
        if self._client is not None:
            self._client.close()
            self._client = None
        for process in self.members:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.send_signal(signal.SIGCONT)  # one stopped by a test cannot act on SIGTERM
        if not wait:
            return
        deadline = time.monotonic() + STOP_GRACE_S
        for process in self.members:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdin is not None:
                process.stdin.close()
        if self._supervisor is not None:
            self._supervisor.join()  # last: the members die with the thread that restarted them

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def local_cluster(members: int = 2, threads: int | None = None, **settings: Any) -> LocalCluster:
    """Start ``members`` member processes here and wait until they are all connected; use it as a
    context manager (or call ``close()``). ``threads``: cooperative threads per member."""
    return LocalCluster(members, threads, **settings)
