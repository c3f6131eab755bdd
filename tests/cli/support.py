"""Running the real ``jet`` command as a user would, from this checkout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

#: This checkout's sources first, so the command and its members run the code under test.
SOURCE_PATH = os.pathsep.join(str(path) for path in (REPO_ROOT / "member", REPO_ROOT / "operator", REPO_ROOT))


def jet_env(**extra: str) -> dict[str, str]:
    """The environment of a ``jet`` process: this one's, with this checkout on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JET")}
    env.update({"PYTHONPATH": SOURCE_PATH, "PYSPARK_PYTHON": sys.executable, **extra})
    return env


def jet_command(*args: object) -> list[str]:
    return [sys.executable, "-m", "jet", *map(str, args)]  # what the `jet` command runs (jet.launcher)


def jet(*args: object, cwd: Path = REPO_ROOT, timeout: float = 180,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``jet ARGS`` to its end; stdout and stderr as text."""
    return subprocess.run(jet_command(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env or jet_env())


def write_job(directory: Path, name: str, code: str) -> Path:
    """A job file ``name`` in ``directory`` holding ``code``."""
    path = directory / name
    path.write_text(code)
    return path


def interrupt_when_started(job, marker, members, sig: int = signal.SIGINT) -> tuple[int, str]:
    """Run ``jet run --members N job marker`` in a process group of its own, send the whole group
    SIGINT (what Ctrl-C in a terminal does; or ``sig``) once the job wrote ``marker``; (exit code,
    stderr)."""
    process = subprocess.Popen(jet_command("run", "--members", members, job, marker), env=jet_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for _ in range(60 * 20):  # a bound of 60 s, not a measurement
            if marker.exists() or process.poll() is not None:
                break
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        assert marker.exists(), "the job started"
        if sig == signal.SIGINT:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)  # as kill or timeout(1) send it: to `jet run` alone
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, err
