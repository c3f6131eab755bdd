"""The body of ``jet member``: settings, the member's life until SIGTERM, the ``--pipeline`` job."""

from __future__ import annotations

import logging
import os
import signal
import threading
import traceback
from typing import Any, Callable, Mapping

from jet.cluster.coordination.job_state import JobConfigError
from jet.cluster.links.auth import CredentialsError
from jet.cluster.links.peers import member_index_from_pod_name
from jet.cluster.member import Member
from jet.cluster.settings import MemberSettings, SettingsError
from jet.core.dag import DAG
from jet.execution.gc_tuning import settle_member_heap
from jet.job_config import JobConfig

log = logging.getLogger("jet.cluster.member")
CLUSTER_READY_TIMEOUT_S = 300.0
POD_NAME_ENV = "POD_NAME"


def resolve_settings(flags: Mapping[str, Any], config_file: str | None,
                     environ: Mapping[str, str] | None = None) -> MemberSettings:
    """Merge the settings; without ``--index`` (flag, env or file) the index is ``$POD_NAME``'s ordinal."""
    env = os.environ if environ is None else environ
    settings = MemberSettings.load(dict(flags), env, config_file)
    if settings.member_index is None and env.get(POD_NAME_ENV):
        try:
            index = member_index_from_pod_name(env[POD_NAME_ENV])
        except ValueError as e:
            raise SettingsError(f"member_index from ${POD_NAME_ENV}: {e}") from None
        settings = MemberSettings.load({**flags, "member_index": index}, env, config_file)
    return settings


def run_member(flags: Mapping[str, Any], config_file: str | None = None,
               job_supplier: Callable[[], DAG] | None = None, job_config: JobConfig | None = None) -> int:
    """Run a member until SIGTERM/SIGINT; the exit code (2 for bad settings, 1 for a failed start).

    Member 0 resumes the unfinished jobs of its snapshot store once the cluster is ready; its
    ``job_supplier`` job (``--pipeline``, with ``job_config``) is submitted unless a job of the
    same name is among them."""
    try:
        settings = resolve_settings(flags, config_file)
        member = Member(settings)
    except (SettingsError, CredentialsError, ValueError, OSError) as e:
        log.error("cannot start the member: %s", e)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, frame: stop.set())
    failed: list[BaseException] = []

    def bring_up() -> None:
        try:
            member.start()
            settle_member_heap()
            if member.index == 0 and (job_supplier is not None or member.snapshot_store is not None):
                member.wait_until_cluster_ready(CLUSTER_READY_TIMEOUT_S)
                member.resume_stored_jobs()
            if job_supplier is not None and member.index == 0:
                try:
                    dag = job_supplier()
                except Exception as error:  # noqa: BLE001 - the user's code: report it, keep serving
                    member.reject("--pipeline", error)
                    return
                config = (job_config or JobConfig()).to_dict()
                try:
                    job_id = member.submit(dag, {**config, "name": config["name"] or getattr(dag, "name", None)})
                except JobConfigError as error:  # a guarantee without a store: reported as the job's failure
                    member.reject(config["name"] or "--pipeline", error)
                    return
                log.info("member 0 submitted the --pipeline job as %s", job_id)
        except BaseException as e:  # noqa: BLE001 - reported, then the member exits
            if not stop.is_set():
                log.error("member %d failed to start: %s\n%s", member.index, e, traceback.format_exc())
                failed.append(e)
            stop.set()

    threading.Thread(target=bring_up, name="jet-start", daemon=True).start()
    while not stop.wait(0.5):
        pass
    log.info("member %d stopping (%s)", member.index, "start failed" if failed else "signal")
    member.stop()
    return 1 if failed else 0
