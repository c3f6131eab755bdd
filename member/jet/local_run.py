"""How ``jet run`` runs a job here: in this process, or on member processes it starts.

Starting member processes costs about 0.7 s, so ``jet run`` boots them (:class:`ClusterBoot`)
while it loads and plans the job file; a file that fails to load closes them again.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from jet.cluster.links.auth import TOKEN_ENV, TOKEN_FILE_ENV, load_cluster_token
from jet.cluster.local import forked_members
from jet.core import DAG
from jet.execution import JobTimeoutError
from jet.execution.progress_log import is_streaming
from jet.execution.runner import start
from jet.job_config import JobConfig
from jet.latest_results import LatestResults, observable_names
from jet.progress import ProgressDisplay

log = logging.getLogger("jet.run")

CANCEL_WAIT_S = 10.0
"""How long an interrupted `jet run` waits for its cancelled job to end on the members."""


class MembersDidNotStart(RuntimeError):
    """The local member processes could not be started; the message says why."""


class ClusterBoot:
    """A local cluster started in a background thread; ``get()`` waits until it is up.

    The thread lives until ``close()``: the members die with the thread that started them
    (PR_SET_PDEATHSIG follows the parent thread), so it must not end while they are used."""

    def __init__(self, members: int, threads: int, keep_snapshot_store: bool = False,
                 snapshot_store: str | None = None, relay_member_logs: bool | None = None) -> None:
        """``snapshot_store``: where the members keep job records and snapshots (default: a new
        directory, removed unless ``keep_snapshot_store``)."""
        forked_members.prestart()
        # On a terminal the members log into files whose lines this process prints through its
        # own stderr, so the live table's redirection puts them above the table, not over it.
        relay = sys.stderr.isatty() if relay_member_logs is None else relay_member_logs
        self._logs = MemberLogRelay(Path(tempfile.mkdtemp(prefix="jet-run-logs-"))) if relay else None
        self._keep_snapshot_store = keep_snapshot_store
        self._store = {} if snapshot_store is None else {"snapshot_store": snapshot_store}
        # The members log at the level `jet run --log-level` set for this process.
        self._log_level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        self._cluster: Any = None
        self._token_file: Path | None = None
        self._error: BaseException | None = None
        self._up = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(members, threads),
                                        name="jet-cluster-boot", daemon=True)
        self._thread.start()

    def _run(self, members: int, threads: int) -> None:
        from jet.local import local_cluster
        try:
            self._cluster = local_cluster(members=members, threads=threads, log_level=self._log_level,
                                          keep_snapshot_store=self._keep_snapshot_store, token=_given_token(),
                                          log_dir=None if self._logs is None else self._logs.directory,
                                          **self._store)
        except BaseException as error:  # noqa: BLE001 - re-raised by get()
            self._error = error
        self._up.set()
        self._closed.wait()

    def get(self) -> Any:
        """The running cluster (waits for it); :class:`MembersDidNotStart` if it could not start."""
        self._up.wait()
        if self._error is not None:
            raise MembersDidNotStart(f"the local members did not start: {type(self._error).__name__}: "
                                     f"{self._error}") from self._error
        return self._cluster

    def token_file(self) -> Path:
        """A file with the running cluster's token that only this user can read (removed by
        :meth:`close`), for ``jet job --token-file``."""
        if self._token_file is None:
            self._token_file = write_token_file(self.get().token)
        return self._token_file

    def close(self) -> None:
        """Stop the members and wait until they are gone, so that they end their logs in order
        and none outlives ``jet run``."""
        if self._token_file is not None:
            shutil.rmtree(self._token_file.parent, ignore_errors=True)
            self._token_file = None
        self._up.wait()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._closed.set()
        if self._logs is not None:
            self._logs.close()


class MemberLogRelay:
    """Prints the new lines of the members' log files (``member-<i>.log`` in ``directory``) to
    this process's current stderr, every :data:`RELAY_INTERVAL_S`, until closed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._read: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jet-member-logs", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(RELAY_INTERVAL_S):
            self._relay()

    def _relay(self) -> None:
        for path in sorted(self.directory.glob("member-*.log")):
            try:
                with path.open("rb") as log_file:
                    log_file.seek(self._read.get(path, 0))
                    data = log_file.read()
            except OSError:
                continue
            whole = data[:data.rfind(b"\n") + 1]  # a line still being written waits for its end
            if whole:
                self._read[path] = self._read.get(path, 0) + len(whole)
                sys.stderr.write(whole.decode("utf-8", "replace"))
                sys.stderr.flush()

    def close(self) -> None:
        """Print what is left, then remove the files."""
        self._stop.set()
        self._thread.join(timeout=2)
        self._relay()
        shutil.rmtree(self.directory, ignore_errors=True)


RELAY_INTERVAL_S = 0.2


@dataclass(frozen=True)
class RunOutcome:
    """A finished job: its ``Sinks.list`` results and how long it ran, from its start on the
    members to its end (what the coordinator logs as ``COMPLETED in``). ``stopped``: a streaming
    job that ``jet run`` cancelled after its run time (``--timeout``); its results are what the
    list sinks held then."""

    results: dict[str, list]
    job_seconds: float
    stopped: bool = False
    latest: dict[str, list] = field(default_factory=dict)
    """The newest items of each observable sink (``Sinks.observable``) when the job ended."""


def _last_execution_seconds(info: dict[str, Any]) -> float | None:
    """Since the job's last execution started, when it restarted (its figures count from there)."""
    began = info.get("executionStartTime")
    if not info.get("restarts") or not began:
        return None
    return (datetime.now().astimezone() - datetime.fromisoformat(began)).total_seconds()


def _cluster_job_seconds(info: dict[str, Any]) -> float:
    """The coordinator's own measure of a job: completion time - (start or submission time)."""
    begin = info.get("startTime") or info.get("submissionTime")
    end = info.get("completionTime")
    if not begin or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(begin)).total_seconds()


def _given_token() -> str | None:
    """The cluster token the user set (``$JET_CLUSTER_TOKEN`` or ``$JET_CLUSTER_TOKEN_FILE``), else
    None (the members get a random one)."""
    if not os.environ.get(TOKEN_ENV) and not os.environ.get(TOKEN_FILE_ENV):
        return None
    return load_cluster_token()


def connect_hint(cluster: Any, token_file: Path) -> str:
    """The one line ``jet run`` prints once its members are up: how ``jet job`` reaches them."""
    return (f"jet run: members at {', '.join(cluster.addresses)}; `jet job --address {cluster.addresses[0]} "
            f"--token-file {token_file} list` reaches them (the token file is readable by you only)")


def write_token_file(token: str) -> Path:
    """The cluster token in a new file only this user can read (0600, in a 0700 directory)."""
    directory = Path(tempfile.mkdtemp(prefix="jet-run-"))
    path = directory / "cluster-token"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(token + "\n")
    return path


def dashboard_line(cluster: Any) -> str:
    """The one line ``jet run --ui`` prints: member 0's dashboard, signing the browser in."""
    return f"Dashboard: http://{cluster.host}:{cluster.http_ports[0]}/login?token={cluster.token}"


def run_locally(dag: DAG, name: str, members: int, threads: int, timeout: float | None,
                boot: ClusterBoot | None, config: JobConfig | None = None, ui: bool = False) -> RunOutcome:
    """Run ``dag`` with a progress display: in this process when ``members`` is 1 (and the job
    has no Spark stages), else on the members ``boot`` starts. On KeyboardInterrupt the job is
    cancelled (in this process) or ends with its members (``boot.close()``).

    ``timeout`` bounds a batch job (``JobTimeoutError`` after cancelling it); a streaming job
    (:func:`~jet.execution.progress_log.is_streaming`) runs that long and is then cancelled, which is
    its normal end (``RunOutcome.stopped``); without ``timeout`` it runs until interrupted or
    until its sources end.

    ``config`` (the job's name, guarantee, snapshot interval): a job with a guarantee runs on
    member processes, whose snapshot directory is printed once.

    ``ui``: the job runs on member processes (one at least), the line of :func:`dashboard_line` is
    printed once they are up, and they stay up after the job ended (the caller closes ``boot``)
    unless the run is interrupted."""
    from jet.spark.job_stages import spark_stages

    config = config or JobConfig(name)
    streaming = is_streaming(dag)
    if members == 1 and spark_stages(dag) != ([], []):
        members = 2  # Spark tasks reach members over gRPC: run a local cluster
    if members == 1 and not config.processing_guarantee.snapshots and not ui \
            and config.initial_snapshot_name is None:  # snapshots need the coordinator
        return _run_in_process(dag, name, threads, timeout, streaming, config.metrics_enabled)
    boot = boot or ClusterBoot(members, threads, keep_snapshot_store=config.processing_guarantee.snapshots)
    job = None
    try:
        cluster = boot.get()
        print(connect_hint(cluster, boot.token_file()), file=sys.stderr, flush=True)
        if config.processing_guarantee.snapshots:
            print(f"jet run: job records and snapshots in {cluster.snapshot_store}", file=sys.stderr)
        if ui:
            print(dashboard_line(cluster), file=sys.stderr, flush=True)
        job = cluster.new_job(dag, config)  # with its Spark side, if it has Spark stages
        latest = LatestResults().follow(job, observable_names(dag))
        with ProgressDisplay(job.metrics, title=name, results_fn=latest.items, streaming=streaming,
                             counted_since_fn=lambda: _last_execution_seconds(job.info())):
            if streaming:
                stopped = _run_for(job, timeout)
            else:
                stopped = False
                job.join(timeout)
        return RunOutcome(job.results(), _cluster_job_seconds(job.info()), stopped, latest.items())
    except KeyboardInterrupt:
        if job is not None:
            _cancel_and_wait(job)
        boot.close()
        raise
    finally:
        if not ui:
            boot.close()


def hold_dashboard(boot: ClusterBoot) -> None:
    """Keep the members (and their dashboard) up until Ctrl-C, then stop them."""
    print("jet run: the job ended; its dashboard stays up until Ctrl-C", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        boot.close()


def _run_in_process(dag: DAG, name: str, threads: int, timeout: float | None, streaming: bool,
                    metrics_enabled: bool = True) -> RunOutcome:
    """Run ``dag`` on one member in this process; its observable sinks publish to the table."""
    log.info("job DAG:\n%s", dag.to_dot(default_local_parallelism=threads))  # (a coordinator logs it on members)
    latest = LatestResults()
    with latest.publish_for(name):
        job = start(dag, threads, job_name=name, metrics_enabled=metrics_enabled)
        started = time.perf_counter()
        try:
            shown = lambda: {**job.results(), **latest.items()}  # noqa: E731 - list sinks, observables
            with ProgressDisplay(job.metrics, title=name, results_fn=shown, streaming=streaming):
                if streaming:
                    stopped = _run_for(job, timeout)
                    results = job.results()
                else:
                    stopped, results = False, job.join(timeout)
        except KeyboardInterrupt:
            job.cancel()
            raise
    return RunOutcome(results, time.perf_counter() - started, stopped, latest.items())


def _run_for(job: Any, duration_s: float | None) -> bool:
    """Let a streaming ``job`` run for ``duration_s`` (until it ends without it), then cancel it
    and wait for it to end; True when it was stopped so, False when it ended by itself (its
    failure is raised)."""
    try:
        job.join(duration_s)
        return False
    except JobTimeoutError:
        log.info("stopping the streaming job after its run time of %s s", duration_s)
        _cancel_and_wait(job)
        return True


def _cancel_and_wait(job: Any) -> None:
    """Cancel ``job`` on the members and wait, bounded, for it to end there, so the members are
    stopped with nothing running (a second Ctrl-C stops waiting)."""
    try:
        job.cancel()
        job.join(CANCEL_WAIT_S)
    except Exception as error:  # noqa: BLE001 - a cancelled job ends in an error; members stop anyway
        log.debug("cancelled job %s ended: %s", getattr(job, "id", job), error)
