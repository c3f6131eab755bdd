"""What a new spec generation does to the previous generation's job before the members change.

- ``spec.suspend`` turned true: a job with a processing guarantee is suspended with a terminal
  snapshot (its record stays in the store, SUSPENDED); then the members are scaled to 0, as the
  Flink operator scales to zero after a savepoint. Turned false: the members come back, member 0
  finds the suspended record and the operator resumes it (:func:`jet_operator.reconcile.follow`).
- any other change of a job's spec, per ``spec.upgradeMode`` (Flink's meanings):
  ``stateless``: the job is cancelled (its record goes) and the new spec starts from the
  beginning, or from ``initialSnapshotName``; ``savepoint``: the job is cancelled with an exported
  snapshot ``<name>-g<old generation>`` and the new spec starts from it; ``last-state``: the job
  is left alone; its members are replaced and member 0 resumes the job from its record's last
  snapshot, as after a lost member.

``spec.allowNonRestoredState`` decides what a failed savepoint does: false (default) keeps the
old job running on the old spec and retries the change; true cancels it and starts the new spec
without its state (from the snapshot the old spec started from, if any). Either way, the
members skip the state of vertices the new pipeline no longer has (one warning per vertex), as
Flink does with its ``allowNonRestoredState``: the engine offers no stricter choice yet.

A savepoint is two persisted steps (Flink's lesson): the intent is written to
``status.upgrade`` before the job is cancelled, so an operator that dies in between finds the
snapshot's name there and starts the new spec from it instead of from nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

from jet_operator import constants, naming
from jet_operator.credentials import secret_text
from jet_operator.jobclient import fetch_job_report
from jet_operator.jobcontrol import ClusterAccess, JobControl, JobControlError
from jet_operator.config import OperatorConfig
from jet_operator.kube import KubeApi
from jet_operator.lifecycle import JobReport, Phase
from jet_operator.ownership import JobRef
from jet_operator.spec import UPGRADE_LAST_STATE, UPGRADE_SAVEPOINT, JetJobSpec

logger = logging.getLogger(__name__)

UPGRADE_TAKING_SAVEPOINT = "TakingSavepoint"
UPGRADE_DONE = "Done"
UPGRADE_FAILED = "Failed"
# /job statuses of a job that can no longer be suspended, cancelled or exported.
ENDED_OR_ABSENT = frozenset({"COMPLETED", "FAILED", "NOT_RUNNING"})


class UpgradeError(Exception):
    """The savepoint of an upgrade could not be taken; the old job keeps running (retry later)."""


@dataclass(frozen=True)
class GenerationStart:
    """How the new generation's job starts."""

    initial_snapshot: str | None
    """The exported snapshot member 0 starts the job from if the store has no record of it."""
    upgrade: dict[str, Any] | None = None
    """``status.upgrade`` for a spec change of a running job."""
    note: str = ""
    """What happened to the old job, for the phase message."""


@dataclass(frozen=True)
class Coordinator:
    """The previous generation's member 0, reachable, and what it last reported."""

    control: JobControl
    report: JobReport


def savepoint_name(job: JobRef, generation: int) -> str:
    """The name of the snapshot a savepoint upgrade exports from ``generation``'s job."""
    return f"{job.name}-g{generation}"


def cluster_token(api: KubeApi, job: JobRef) -> str | None:
    """The job's cluster token from its Secret; None while the Secret is missing."""
    secret = api.get("Secret", job.namespace, naming.token_secret_name(job.name))
    return None if secret is None else secret_text(secret, constants.TOKEN_KEY)


def find_coordinator(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec) -> Coordinator | None:
    """Member 0 of the job's members, if it answers ``/job`` with a job."""
    token = cluster_token(api, job)
    if token is None:
        return None
    url = config.job_url(job.name, job.namespace)

    def report() -> JobReport | None:
        return fetch_job_report(url, config.job_poll_timeout_seconds, token)

    first = report()
    if first is None or not first.job_id:
        return None
    ca_pem = None
    if spec.tls_enabled:
        ca_secret = api.get("Secret", job.namespace, naming.ca_secret_name(job.name))
        ca_pem = None if ca_secret is None else secret_text(ca_secret, constants.CA_CERT_KEY)
    access = ClusterAccess(address=config.member_address(job.name, job.namespace), token=token, ca_pem=ca_pem,
                           server_name=naming.member_host(job.name, job.namespace, 0))
    return Coordinator(JobControl(access, report, config.snapshot_action_timeout_seconds), first)


def prepare_generation(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
                       status: Mapping[str, Any]) -> GenerationStart:
    """Act on the previous generation's job as the new ``spec`` asks (see the module docstring)."""
    phase = status.get("phase")
    started_from = status.get("startSnapshot") or spec.initial_snapshot_name
    if not phase:  # a new JetJob
        return GenerationStart(spec.initial_snapshot_name)
    if phase == Phase.SUSPENDED.value:  # stays suspended, or resumes from the suspended record
        if spec.suspended:
            return GenerationStart(started_from)
        return GenerationStart(started_from, note=(
            "resuming: member 0 resumes the job from its last snapshot" if spec.has_guarantee
            else "resuming: no processing guarantee, so the job starts from the beginning"))
    if spec.suspended:
        return GenerationStart(started_from, note=_suspend(api, config, job, spec))
    upgrade = {"mode": spec.upgrade_mode, "fromGeneration": int(status.get("observedGeneration") or 0),
               "toGeneration": job.generation, "snapshot": None, "state": UPGRADE_DONE}
    if spec.upgrade_mode == UPGRADE_LAST_STATE:
        note = "upgradeMode last-state: the job resumes from its last snapshot"
        return GenerationStart(started_from, {**upgrade, "message": note}, note)
    if spec.upgrade_mode == UPGRADE_SAVEPOINT:
        return _savepoint(api, config, job, spec, status, upgrade, started_from)
    start = f"snapshot {spec.initial_snapshot_name}" if spec.initial_snapshot_name else "the beginning"
    note = f"upgradeMode stateless: the job was cancelled; the new spec starts from {start}"
    # Only a job with a store has a record that would outlive its members: cancel it.
    coordinator = find_coordinator(api, config, job, spec) if spec.snapshot_storage is not None else None
    if coordinator is not None and coordinator.report.status not in ENDED_OR_ABSENT:
        try:
            coordinator.control.cancel(coordinator.report.job_id)
        except JobControlError as error:
            logger.warning("%s/%s: %s", job.namespace, job.name, error)
            note += f"; the old job could not be cancelled ({error})"
    return GenerationStart(spec.initial_snapshot_name, {**upgrade, "message": note}, note)


def _suspend(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec) -> str:
    """Suspend the job with a terminal snapshot when it has a guarantee; returns the note."""
    if not spec.has_guarantee:
        return "no processing guarantee: the job starts from the beginning when resumed"
    coordinator = find_coordinator(api, config, job, spec)
    if coordinator is None or coordinator.report.status in ENDED_OR_ABSENT:
        return "the job was not running; it resumes from its last snapshot"
    if coordinator.report.status == "SUSPENDED":
        return "the job was suspended already"
    try:
        report = coordinator.control.suspend(coordinator.report.job_id)
    except JobControlError as error:
        logger.warning("%s/%s: %s", job.namespace, job.name, error)
        return f"no terminal snapshot ({error}); the job resumes from its last snapshot"
    snapshot = (report.last_snapshot or {}).get("id")
    taken = f"terminal snapshot {snapshot}" if snapshot is not None else "a terminal snapshot"
    return f"job {report.job_id} took {taken} and is SUSPENDED; spec.suspend: false resumes it from there"


def _savepoint(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec, status: Mapping[str, Any],
               upgrade: dict[str, Any], started_from: str | None) -> GenerationStart:
    """Cancel the job with an exported snapshot and start the new spec from it."""
    name = savepoint_name(job, upgrade["fromGeneration"])
    earlier = status.get("upgrade") or {}
    coordinator = find_coordinator(api, config, job, spec)
    if coordinator is not None and coordinator.report.status not in ENDED_OR_ABSENT:
        _persist_upgrade(api, job, {**upgrade, "snapshot": name, "state": UPGRADE_TAKING_SAVEPOINT,
                                    "message": f"cancelling the job with snapshot {name}"})
        try:
            coordinator.control.cancel_and_export(coordinator.report.job_id, name)
        except JobControlError as error:
            if spec.allow_non_restored_state:
                return _drop_state(coordinator, name, error, upgrade, started_from, job)
            message = (f"savepoint {name} failed, the job keeps running on the old spec: {error} "
                       "(spec.allowNonRestoredState: true would start the new spec without it)")
            _persist_upgrade(api, job, {**upgrade, "snapshot": name, "state": UPGRADE_FAILED, "message": message})
            raise UpgradeError(message) from error
        note = f"upgradeMode savepoint: the job was cancelled with snapshot {name}; the new spec starts from it"
        return GenerationStart(name, {**upgrade, "snapshot": name, "message": note}, note)
    if earlier.get("toGeneration") == job.generation and earlier.get("state") == UPGRADE_TAKING_SAVEPOINT:
        name = earlier["snapshot"]  # taken by an operator that stopped before it could say so
        note = f"upgradeMode savepoint: the new spec starts from snapshot {name}"
        return GenerationStart(name, {**upgrade, "snapshot": name, "message": note}, note)
    note = ("the job was not running, so no savepoint was taken; it starts from "
            + (f"snapshot {started_from}" if started_from else "the beginning"))
    return GenerationStart(started_from, {**upgrade, "message": note}, note)


def _drop_state(coordinator: Coordinator, name: str, error: JobControlError, upgrade: dict[str, Any],
                started_from: str | None, job: JobRef) -> GenerationStart:
    """``allowNonRestoredState``: the savepoint failed, so the old job is cancelled and the new
    spec starts without the state it had (from the snapshot the old spec started from, if any)."""
    try:
        coordinator.control.cancel(coordinator.report.job_id)
        cancelled = "the job was cancelled"
    except JobControlError as cancel_error:
        logger.warning("%s/%s: %s", job.namespace, job.name, cancel_error)
        cancelled = f"the job could not be cancelled either ({cancel_error}); its members are replaced"
    start = f"snapshot {started_from}" if started_from else "the beginning"
    note = (f"upgradeMode savepoint: savepoint {name} failed ({error}); spec.allowNonRestoredState: {cancelled} "
            f"and the new spec starts from {start}, without the state since")
    return GenerationStart(started_from, {**upgrade, "snapshot": None, "message": note, "stateDropped": True}, note)


def _persist_upgrade(api: KubeApi, job: JobRef, upgrade: dict[str, Any]) -> None:
    api.patch(constants.KIND, job.namespace, job.name, {"status": {"upgrade": upgrade}}, subresource="status")
