"""A throwaway PostgreSQL 15 server for the connector tests: ``initdb`` in a temporary directory,
``postgres`` on a free loopback port with logical replication and prepared transactions on.

PostgreSQL refuses to run as root, and the tests usually do: the data directory then belongs
to an unprivileged user (``postgres`` from the Debian package, else ``nobody``) and the server
programs run as that user (``subprocess``'s ``user``/``group``, so the server is our direct child
and a signal to it reaches it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "jet"
PASSWORD = "jet-test-secret"
START_TIMEOUT_S = 60.0
SERVER_SETTINGS = {
    "wal_level": "logical",
    "max_prepared_transactions": "20",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
    "track_commit_timestamp": "on",  # pg_xact_commit_timestamp(xmin): the tests' oracle of commit times
    "fsync": "off",  # a test server: durability against power loss is not what is tested
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
}


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server programs are not installed here."""


@dataclass
class PostgresServer:
    """A running test server: where it listens and how to log in."""

    host: str
    port: int
    data_dir: Path
    process: subprocess.Popen
    log_path: Path
    command: list[str]
    run_as: str | None = None
    user: str = SUPERUSER
    password: str = PASSWORD

    def dsn(self, dbname: str = "postgres", **overrides: str) -> str:
        """A libpq connection string for this server (``overrides`` replace its fields)."""
        fields = {"host": self.host, "port": str(self.port), "user": self.user, "password": self.password,
                  "dbname": dbname, "connect_timeout": "10", **overrides}
        return " ".join(f"{key}={value}" for key, value in fields.items())

    def stop_fast(self) -> None:
        """``pg_ctl stop -m fast``: sessions are ended, open transactions rolled back, prepared
        ones kept; the data directory stays for :meth:`start_again`."""
        subprocess.run([str(server_bin_dir() / "pg_ctl"), "stop", "-D", str(self.data_dir), "-m", "fast", "-w"],
                       check=True, capture_output=True, timeout=60, cwd=self.data_dir.parent, **_as_user(self.run_as))
        self.process.wait(30)

    def start_again(self) -> None:
        """Start the server stopped by :meth:`stop_fast` on the same port and data directory."""
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                            cwd=self.data_dir.parent, **_as_user(self.run_as))
        _wait_ready(self)

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then kill if it does not stop within 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


def server_bin_dir() -> Path:
    """The directory of ``initdb`` and ``postgres``; PostgreSQLUnavailable when not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if candidates:
        return candidates[-1].parent
    raise PostgresUnavailable("PostgreSQL server programs (initdb, postgres) are not installed: "
                              "apt-get install postgresql")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_as() -> str | None:
    """The unprivileged user to run the server as when we are root, else None (ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")


def _as_user(user: str | None) -> dict:
    """``subprocess`` arguments that run a program as ``user`` (nothing when None)."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": [],
            "env": {**os.environ, "HOME": str(entry.pw_dir), "USER": user}}


def start_server() -> PostgresServer:
    """initdb and start a server; returns once it accepts connections."""
    bin_dir = server_bin_dir()
    user = _run_as()
    root = Path(tempfile.mkdtemp(prefix="jet-pg-"))
    data_dir = root / "data"
    password_file = root / "password"
    password_file.write_text(PASSWORD)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        os.chown(password_file, entry.pw_uid, entry.pw_gid)
    subprocess.run([str(bin_dir / "initdb"), "-D", str(data_dir), "-U", SUPERUSER, "--pwfile", str(password_file),
                    "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync"],
                   check=True, capture_output=True, timeout=120, cwd=root, **_as_user(user))
    with open(data_dir / "pg_hba.conf", "a") as hba:  # the file belongs to the server's user; root may append
        hba.write("host replication all 127.0.0.1/32 scram-sha-256\n")
    port = _free_port()
    options = [arg for key, value in {**SERVER_SETTINGS, "port": str(port)}.items() for arg in ("-c", f"{key}={value}")]
    log_path = root / "server.log"
    command = [str(bin_dir / "postgres"), "-D", str(data_dir), *options]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=root, **_as_user(user))
    server = PostgresServer("127.0.0.1", port, data_dir, process, log_path, command, user)
    _wait_ready(server)
    return server


def _wait_ready(server: PostgresServer) -> None:
    log_path = server.log_path
    import psycopg
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"postgres exited with {server.process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            psycopg.connect(server.dsn(connect_timeout="2")).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"postgres did not accept connections within {START_TIMEOUT_S} s: "
                                   f"{log_path.read_text()[-2000:]}")
            time.sleep(0.1)
