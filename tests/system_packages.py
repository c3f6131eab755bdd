"""Tests that need a program from the system's packages (not from pip) say so the same way
everywhere: outside CI they skip, naming the Debian package to install; under ``CI=true`` (where
``.ci/run`` installs every one of them) they fail, so a missing install step is never green."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

#: Every system package the test suite uses, and what for (the README lists them too).
PACKAGES = {
    "openjdk-17-jre-headless": "Java, for PySpark (the Spark tests)",
    "iproute2": "ip, for the network-namespace tests",
    "chromium": "headless Chromium, for the dashboard's browser tests",
    "chromium-driver": "its WebDriver, for the same tests",
    "prometheus": "a real Prometheus answering the Grafana dashboard's queries",
    "postgresql": "a PostgreSQL server the PostgreSQL connector tests start (initdb, postgres)",
    "buildah": "building and running the image (tests/image, with $JET_TEST_IMAGE)",
    "mmdebstrap": "the image's base system (docker/build-without-daemon.sh)",
}


def running_in_ci() -> bool:
    """Whether this is a CI run ($CI set to true, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def unavailable(reason: str) -> None:
    """Skip the test naming what is missing; fail it under CI."""
    if running_in_ci():
        pytest.fail(f"cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_program(program: str, package: str) -> str:
    """The path of ``program`` (a name on PATH or an absolute path); skips naming ``package``
    when it is missing (fails under CI)."""
    found = shutil.which(program) if not Path(program).is_absolute() else (program if Path(program).exists() else None)
    if found is None:
        unavailable(f"{program} is not installed (apt-get install {package}: {PACKAGES[package]})")
    return found
