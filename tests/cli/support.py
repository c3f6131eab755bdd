"""Running the real ``jet`` command as a user would, from this checkout."""

from __future__ import annotations

import os
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
    return [sys.executable, "-m", "jet.cli", *map(str, args)]


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
