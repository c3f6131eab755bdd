"""Local members forked by :mod:`jet.cluster.local.fork_server`, with ``subprocess.Popen``'s face.

The local cluster starts one fork server per client process (on first use) and asks it for
each member; :class:`ForkedMember` offers what the cluster, its supervisor and the tests use
of a ``Popen`` (``pid``, ``poll``, ``returncode``, ``wait``, ``send_signal``, ``kill``,
``terminate``, ``stdin.close()``), so a forked member and a spawned one are handled alike.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any

_lock = threading.Lock()
_server: "ForkServer | None" = None


#: Set to 0 to start every local member as its own ``python -m jet.cli member`` process.
FORK_ENV = "JET_FORK_MEMBERS"


def available(member_env: dict[str, str] | None = None) -> bool:
    """Whether a member with this environment can be forked here: POSIX ``fork``, not turned off
    by ``$JET_FORK_MEMBERS=0``, and no ``PYTHONHASHSEED`` of its own (a forked member keeps the
    fork server's string hashing, which is fixed when an interpreter starts)."""
    if member_env is not None and member_env.get("PYTHONHASHSEED") != os.environ.get("PYTHONHASHSEED"):
        return False
    return hasattr(os, "fork") and sys.platform != "win32" and os.environ.get(FORK_ENV, "1") != "0"


class ForkServer:
    """The client's end of a running fork server."""

    def __init__(self, env: dict[str, str]) -> None:
        reply_read, reply_write = os.pipe()
        self._process = subprocess.Popen([sys.executable, "-m", "jet.cluster.local.fork_server", str(reply_write)],
                                         stdin=subprocess.PIPE, pass_fds=(reply_write,), env=env,
                                         start_new_session=True)
        os.close(reply_write)
        self._replies = os.fdopen(reply_read, "rb")
        self._send_lock = threading.Lock()
        self._next_id = 0
        self._forked: dict[int, tuple[threading.Event, list[int]]] = {}
        self._members: dict[int, ForkedMember] = {}
        self._early_exits: dict[int, int] = {}
        threading.Thread(target=self._read_replies, name="jet-fork-server", daemon=True).start()

    def is_alive(self) -> bool:
        return self._process.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()

    def fork(self, member: "ForkedMember", env: dict[str, str], log_path: str | None) -> int:
        done, pid = threading.Event(), []
        with self._send_lock:
            request_id = self._next_id = self._next_id + 1
            self._forked[request_id] = (done, pid)
        self.send({"op": "fork", "id": request_id, "args": member.args, "env": env, "log": log_path})
        if not done.wait(60) or not pid:
            raise RuntimeError(f"the fork server did not start {member.args} (is it alive: {self.is_alive()})")
        with self._send_lock:
            self._members[pid[0]] = member
            early = self._early_exits.pop(pid[0], None)
        if early is not None:
            member.exited(early)
        return pid[0]

    def _read_replies(self) -> None:
        for line in self._replies:
            message = json.loads(line)
            if "id" in message:
                done, pid = self._forked.pop(message["id"])
                pid.append(message["pid"])
                done.set()
                continue
            with self._send_lock:
                member = self._members.pop(message["exit"], None)
                if member is None:
                    self._early_exits[message["exit"]] = message["code"]
            if member is not None:
                member.exited(message["code"])
        for done, _ in list(self._forked.values()):
            done.set()  # the server is gone: nobody waits forever


def prestart() -> None:
    """Start the fork server now, if members can be forked here, so that its imports overlap
    with the caller's own work (``jet run`` loads the job file meanwhile)."""
    if available():
        _fork_server({"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})


def _fork_server(member_env: dict[str, str]) -> ForkServer:
    """The running fork server, started first with this process's environment and the
    members' ``PYTHONPATH`` (each member gets its own environment when forked)."""
    global _server
    with _lock:
        if _server is None or not _server.is_alive():
            _server = ForkServer({**os.environ, "PYTHONPATH": member_env.get("PYTHONPATH", "")})
        return _server


class _MemberStdin:
    """``Popen.stdin`` of a forked member: closing it closes the member's standard input."""

    def __init__(self, server: ForkServer, member: "ForkedMember") -> None:
        self._server, self._member, self.closed = server, member, False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._server.send({"op": "close", "pid": self._member.pid})
            except (OSError, ValueError):
                pass  # the server is gone, and with it every member's stdin


class ForkedMember:
    """One member forked by the fork server."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: str | None) -> None:
        self.args = args
        self.returncode: int | None = None
        self._ended = threading.Event()
        server = _fork_server(env)
        self.stdin = _MemberStdin(server, self)
        self.pid = server.fork(self, env, log_path)

    def exited(self, code: int) -> None:
        self.returncode = code
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
