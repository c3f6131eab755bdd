"""A process that has imported the member's code once and forks local members on request.

Starting a member as ``python -m jet.cli member ...`` costs each process the interpreter's
start and the member's imports (0.3-0.6 s of CPU): 16 members on 2 cores took about 5 s for
that alone (bench/README.md, "What grows with the member count"). The local cluster starts
this server once per client process instead (:mod:`jet.cluster.local.forked_members`); it imports
:data:`PRELOAD` and then forks each member, which runs the very same ``jet`` command line.

Protocol: one JSON object per line on stdin; replies and notices, one JSON object per line,
on the descriptor given as the only argument:

- ``{"op": "fork", "id": n, "args": [...], "env": {...}, "log": path | null}`` -> ``{"id": n,
  "pid": pid}``: fork a member; its stdin is a pipe this server holds the other end of, its
  stdout and stderr the log file (appended to) or this server's stderr;
- ``{"op": "close", "pid": pid}``: close that member's stdin (``--exit-with-parent`` then
  makes it exit);
- notice ``{"exit": pid, "code": c}`` when a member ends (``-signal`` when killed by one).

The server is single-threaded (a forked child inherits no other thread's locks), dies with
its parent, and exits at the end of its stdin; its members then see their stdin end too.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import sys
from typing import Any

from jet.cluster.local.parent_watch import set_parent_death_signal, set_process_name

#: Imported once, before any fork: what a member needs to start and to run jobs (nothing that
#: starts a thread at import).
PRELOAD = ("jet.cli", "jet.cluster.member_main", "jet.cluster.member", "jet.connectors.sources", "jet.connectors.sinks",
           "jet.connectors.source_builder", "jet.connectors.sink_builder", "jet.pipeline", "jet.execution.service",
           "cloudpickle")  # jet.connectors imports its modules on first use: they are named here
REAP_INTERVAL_S = 0.05


def _run_child(request: dict[str, Any], stdin_read: int, others: list[int]) -> None:
    """In the forked member: what ``subprocess.Popen(args, env=env, stdin=PIPE, stdout=log,
    stderr=log, start_new_session=True)`` would have started; never returns."""
    code = 1
    try:
        os.setsid()
        args = request["args"]
        index = args[args.index("--index") + 1] if "--index" in args[:-1] else ""
        set_process_name(f"jet-member-{index}" if index else "jet-member")  # not "python" in top
        os.dup2(stdin_read, 0)
        for fd in [stdin_read, *others]:
            os.close(fd)
        if request.get("log"):
            log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
        else:
            os.dup2(2, 1)
        os.environ.clear()
        os.environ.update(request["env"])
        # The server's import path is the first member's; this member's own PYTHONPATH (its
        # client's path now, say with the job file's directory) comes first, as in a new process.
        own_path = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [p for p in own_path if p not in sys.path]
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        # The request's args are a ``python -m MODULE ARGS...`` command line (the ``jet`` command,
        # preloaded): run as MODULE.main(ARGS), the click command's entry.
        sys.argv = list(request["args"])
        _python, dash_m, module, *args = request["args"]
        if dash_m != "-m":
            raise ValueError(f"a fork request runs `python -m MODULE ...`, got {request['args'][:3]}")
        importlib.import_module(module).main(args, prog_name="jet")
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported like an uncaught exception would be
        import traceback
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(reply_fd: int) -> None:
    set_parent_death_signal()
    set_process_name("jet-fork-server")
    for module in PRELOAD:
        importlib.import_module(module)
    member_stdins: dict[int, int] = {}  # pid -> write end of its stdin pipe
    running: set[int] = set()
    exit_fds: dict[int, int] = {}  # pid -> its pidfd, readable once it has exited
    reply_fds = [reply_fd]
    pending = b""  # read from the command pipe, not yet a whole line

    def reply(message: dict[str, Any]) -> None:
        os.write(reply_fd, json.dumps(message).encode() + b"\n")

    while True:
        # Woken by a member's exit where every member has a pidfd: a poll every 50 ms made
        # `jet run` wait 25 ms on average for its members to be gone.
        polled = len(exit_fds) < len(running)
        ready, _, _ = select.select([0, *exit_fds.values()], [], [], REAP_INTERVAL_S if polled else None)
        if 0 in ready:
            data = os.read(0, 1 << 16)  # raw reads: a buffered reader would hide lines from select
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                request = json.loads(line)
                if request["op"] == "fork":
                    read_end, write_end = os.pipe()
                    pid = os.fork()
                    if pid == 0:
                        # (stdin, the command pipe, becomes the member's own pipe by dup2)
                        _run_child(request, read_end, [write_end, *member_stdins.values(), *reply_fds,
                                                       *exit_fds.values()])
                    os.close(read_end)
                    member_stdins[pid] = write_end
                    running.add(pid)
                    exit_fd = _exit_fd(pid)
                    if exit_fd is not None:
                        exit_fds[pid] = exit_fd
                    reply({"id": request["id"], "pid": pid})
                elif request["op"] == "close" and request["pid"] in member_stdins:
                    os.close(member_stdins.pop(request["pid"]))
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            running.discard(pid)
            if pid in member_stdins:
                os.close(member_stdins.pop(pid))
            if pid in exit_fds:
                os.close(exit_fds.pop(pid))
            reply({"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or None: then the
    server polls for exits every :data:`REAP_INTERVAL_S`."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


if __name__ == "__main__":
    serve(int(sys.argv[1]))
