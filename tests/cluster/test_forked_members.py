"""Members forked by the fork server behave like spawned ones: exit codes, signals, logs, stdin."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from jet.cluster.local import forked_members
from jet.cluster.local.local_cluster import _python_path, free_ports

from tests.cluster.cluster_support import wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": _python_path(), "JET_CLUSTER_TOKEN": "forked-members-test"}


def jet_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "jet.cli", *args]


def test_exit_code_and_output_reach_the_caller(tmp_path):
    log = tmp_path / "member.log"
    member = forked_members.ForkedMember(jet_command("member", "--port", "not-a-port"), env(), str(log))
    assert member.wait(30) == 2  # click's usage error
    assert "not-a-port" in log.read_text()
    assert member.poll() == 2 and member.returncode == 2


def test_signals_and_stdin(tmp_path):
    """A member killed reports -SIGKILL; one whose stdin is closed exits (--exit-with-parent),
    while the server goes on forking."""
    def member_args() -> list[str]:
        port, http_port = free_ports(2, "127.0.0.1")
        return ["member", "--host", "127.0.0.1", "--port", str(port), "--http-port", str(http_port),
                "--peers", f"127.0.0.1:{port}", "--index", "0", "--exit-with-parent"]

    killed = forked_members.ForkedMember(jet_command(*member_args()), env(), str(tmp_path / "a.log"))
    assert killed.poll() is None
    killed.kill()
    assert killed.wait(30) == -signal.SIGKILL
    closed = forked_members.ForkedMember(jet_command(*member_args()), env(), str(tmp_path / "b.log"))
    log = tmp_path / "b.log"
    wait_until(lambda: log.exists() and "serving gRPC" in log.read_text(), 30, "the member to serve")
    if sys.platform.startswith("linux"):  # named in top, not "python"
        assert open(f"/proc/{closed.pid}/comm").read().strip() == "jet-member-0"
    closed.stdin.close()
    assert closed.wait(30) != 0 and closed.stdin.closed
    assert "closed our stdin" in (tmp_path / "b.log").read_text()


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(forked_members.FORK_ENV, "0")
    assert not forked_members.available()


def test_a_member_with_its_own_hash_seed_is_not_forked(monkeypatch):
    monkeypatch.delenv(forked_members.FORK_ENV, raising=False)
    monkeypatch.setenv("PYTHONHASHSEED", "1")
    assert forked_members.available({"PYTHONHASHSEED": "1"})
    assert not forked_members.available({"PYTHONHASHSEED": "2"})


def test_a_member_imports_from_its_own_pythonpath(tmp_path):
    """The server's import path is fixed when it starts; a member forked later with a PYTHONPATH
    that has more on it (the job's library here) still imports from there."""
    forked_members.prestart()  # started (if not yet) without the library on its path
    library, jobs = tmp_path / "library", tmp_path / "jobs"
    library.mkdir()
    jobs.mkdir()
    (library / "probe_library.py").write_text("ANSWER = 'forty-two'\n")
    (jobs / "job.py").write_text(
        "import probe_library\n"
        "from jet import Pipeline, Sinks, Sources\n\n"
        "def pipeline():\n"
        "    p = Pipeline.create()\n"
        "    p.read_from(Sources.items([probe_library.ANSWER])).write_to(Sinks.list())\n"
        "    return p\n")
    log = tmp_path / "run.log"
    member_env = {**env(), "PYTHONPATH": os.pathsep.join([str(library), _python_path()])}
    member = forked_members.ForkedMember(jet_command("run", "--members", "1", str(jobs / "job.py")),
                                         member_env, str(log))
    assert member.wait(60) == 0, log.read_text()
    assert "forty-two" in log.read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_member_holds_no_descriptor_of_its_siblings_exits(tmp_path):
    """The server watches each member's exit through a pidfd; a member forked after another
    must not inherit the first one's."""
    def member_args() -> list[str]:
        port, http_port = free_ports(2, "127.0.0.1")
        return ["member", "--host", "127.0.0.1", "--port", str(port), "--http-port", str(http_port),
                "--peers", f"127.0.0.1:{port}", "--index", "0", "--exit-with-parent"]

    first = forked_members.ForkedMember(jet_command(*member_args()), env(), str(tmp_path / "a.log"))
    second = forked_members.ForkedMember(jet_command(*member_args()), env(), str(tmp_path / "b.log"))
    try:
        log = tmp_path / "b.log"
        wait_until(lambda: log.exists() and "serving gRPC" in log.read_text(), 30, "the second member to serve")
        fds = os.listdir(f"/proc/{second.pid}/fd")
        links = [os.readlink(f"/proc/{second.pid}/fd/{fd}") for fd in fds if os.path.exists(f"/proc/{second.pid}/fd/{fd}")]
        assert not [link for link in links if "pidfd" in link], links
    finally:
        for member in (first, second):
            member.kill()
            assert member.wait(30) == -signal.SIGKILL
