"""Fixtures of the cluster tests: peer processes and a self-signed TLS certificate."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from jet.cluster.links.auth import TlsConfig, write_self_signed_tls

PEER_SCRIPT = Path(__file__).with_name("peer_process.py")
MEMBER_ROOT = Path(__file__).resolve().parents[2] / "member"


def start_peer(*args: str) -> tuple[subprocess.Popen, str]:
    """Start ``peer_process.py`` with ``args``; returns the process and its first output line."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(MEMBER_ROOT), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen([sys.executable, str(PEER_SCRIPT), *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline().strip()
    if not line:
        process.kill()
        raise RuntimeError(f"peer process {args} exited with {process.wait()} before reporting")
    return process, line


@pytest.fixture
def peer_processes():
    """Starts peer processes and kills whatever is left of them after the test."""
    started: list[subprocess.Popen] = []

    def start(*args: str) -> tuple[subprocess.Popen, str]:
        process, line = start_peer(*args)
        started.append(process)
        return process, line

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(10)


@pytest.fixture(scope="session")
def tls_config(tmp_path_factory) -> TlsConfig:
    """A self-signed certificate for localhost and 127.0.0.1."""
    return write_self_signed_tls(tmp_path_factory.mktemp("tls"))


def _local_cluster(tmp_path_factory, members: int):
    from jet.cluster.local.local_cluster import LocalCluster
    return LocalCluster(members, log_dir=tmp_path_factory.mktemp(f"cluster{members}-logs"))


@pytest.fixture(scope="session")
def cluster2(tmp_path_factory):
    """Two member processes shared by the tests that leave the cluster healthy."""
    with _local_cluster(tmp_path_factory, 2) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster3(tmp_path_factory):
    """Three member processes shared by the tests that leave the cluster healthy."""
    with _local_cluster(tmp_path_factory, 3) as cluster:
        yield cluster
