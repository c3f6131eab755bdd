"""Imperative actions asked for declaratively, as the Flink operator's nonces do.

A change of ``spec.restartNonce`` restarts the job; a change of ``spec.snapshot.exportNonce``
exports a snapshot of it. Neither is a new spec for the job: a spec change that touches only
the *action fields* (:data:`ACTION_FIELDS`: the nonces, the export history's limits,
``ttlSecondsAfterFinished``, ``allowNonRestoredState``) is carried out on the running job and
leaves its members alone. Every other change starts a new spec generation
(:func:`jet_operator.reconcile.start_generation`), which takes the nonces of its spec as
handled (the job starts anew anyway).

The operator tells the two apart by a digest of the spec without its action fields
(``status.specHash``, written when a generation starts), so it does so after its own restart
too. ``status.nonces`` holds the nonces last handled; ``status.membersGeneration`` the spec
generation the members run (``observedGeneration`` follows every change).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from typing import Any, Mapping

from jet_operator import reconcile
from jet_operator.builders import JobRef
from jet_operator.config import OperatorConfig
from jet_operator.exports import export_name, exports_status, history_entry
from jet_operator.generations import ENDED_OR_ABSENT, find_coordinator
from jet_operator.jobcontrol import JobControlError
from jet_operator.kube import KubeApi
from jet_operator.lifecycle import TERMINAL_PHASES, Phase, format_time, parse_time
from jet_operator.reconcile import JobEvent, StatusUpdate
from jet_operator.spec import JetJobSpec

logger = logging.getLogger(__name__)

ACTION_FIELDS = frozenset({"restartNonce", "snapshot", "ttlSecondsAfterFinished", "allowNonRestoredState"})


def generation_hash(spec: Mapping[str, Any]) -> str:
    """A digest of ``spec`` without its action fields: the same digest needs no new generation."""
    relevant = {key: value for key, value in dict(spec).items() if key not in ACTION_FIELDS}
    text = json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def only_actions_changed(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether a started JetJob's spec changed in its action fields alone."""
    return bool(status.get("phase")) and status.get("specHash") == generation_hash(spec)


def members_job(job: JobRef, status: Mapping[str, Any]) -> JobRef:
    """``job`` as its members know it: the spec generation they were made for."""
    generation = status.get("membersGeneration") or status.get("observedGeneration") or job.generation
    return JobRef(job.name, job.namespace, job.uid, int(generation))


def apply_actions(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
                  status: Mapping[str, Any], now: datetime.datetime) -> StatusUpdate:
    """Carry out a spec change of action fields only (``job`` at the new generation)."""
    members = members_job(job, status)
    phase = Phase(status.get("phase"))
    nonces = dict(status.get("nonces") or {})
    events: list[JobEvent] = []
    fields: dict[str, Any] = {}
    restarted: StatusUpdate | None = None

    # Both at once: the export first (of the job as it runs), then the restart.
    if spec.snapshot.export_nonce != nonces.get("export"):
        nonces["export"] = spec.snapshot.export_nonce
        if spec.snapshot.export_nonce is not None:  # a nonce removed asks for nothing
            exports, event = _export(api, config, members, spec, status, now, phase)
            fields["snapshotExports"] = exports
            events.append(event)
    if spec.restart_nonce != nonces.get("restart"):
        nonces["restart"] = spec.restart_nonce
        if spec.restart_nonce is not None:
            restarted, event = _restart(api, config, job, members, spec, status, now, phase)
            events.append(event)
    exports, retired = reconcile.retire_exports(api, config, members, spec,
                                                fields.get("snapshotExports") or exports_status(status), status, now)
    if exports is not None:
        fields["snapshotExports"] = exports
    events += retired
    until = _members_until(status, spec)
    if until is not None:
        fields["membersUntil"] = until
    fields["nonces"] = nonces

    if restarted is not None:
        restarted.events[:0] = events
        restarted.status.update(fields)
        return restarted
    return reconcile.phase_update(phase, str(status.get("message") or ""), status, job.generation, now,
                                  events=events, **fields)


def _restart(api: KubeApi, config: OperatorConfig, job: JobRef, members: JobRef, spec: JetJobSpec,
             status: Mapping[str, Any], now: datetime.datetime,
             phase: Phase) -> tuple[StatusUpdate | None, JobEvent]:
    """``spec.restartNonce`` changed: the running job restarts through its coordinator (from a
    terminal snapshot with a guarantee); a finished job, or one whose coordinator does not
    answer, restarts by new members (a new attempt); a suspended job is left suspended."""
    asked = f"spec.restartNonce changed to {spec.restart_nonce!r}"
    if phase == Phase.SUSPENDED:
        return None, JobEvent("RestartSkipped", f"{asked}, but the job is suspended: nothing to restart "
                                                "(spec.suspend: false resumes it)")
    coordinator = None if phase in TERMINAL_PHASES else find_coordinator(api, config, members, spec)
    if coordinator is not None and coordinator.report.status not in ENDED_OR_ABSENT | {"SUSPENDED"}:
        job_id = coordinator.report.job_id
        try:
            coordinator.control.restart(job_id)
        except JobControlError as error:
            logger.warning("%s/%s: %s", job.namespace, job.name, error)
        else:
            source = ("from a terminal snapshot" if spec.has_guarantee else "from the beginning (no guarantee)")
            return None, JobEvent("Restarting", f"{asked}: job {job_id} restarts {source}")
    update = reconcile.restart(api, config, members, spec, status, now, observed_generation=job.generation)
    return update, JobEvent("Restarting", f"{asked}: every member pod is replaced (restart "
                                          f"{update.status['restartCount']})")


def _export(api: KubeApi, config: OperatorConfig, members: JobRef, spec: JetJobSpec, status: Mapping[str, Any],
            now: datetime.datetime, phase: Phase) -> tuple[dict[str, Any], JobEvent]:
    """``spec.snapshot.exportNonce`` changed: ask the job for an exported snapshot and record it."""
    exports = exports_status(status)
    nonce = spec.snapshot.export_nonce
    name = export_name(members.name, exports["total"] + 1, now)
    problem = None
    if not spec.has_guarantee:
        problem = "the job has no processing guarantee, so it takes no snapshots to export"
    elif phase in TERMINAL_PHASES or phase == Phase.SUSPENDED:
        problem = f"the job is {phase.value}: its members are not running"
    coordinator = None if problem else find_coordinator(api, config, members, spec)
    if problem is None and (coordinator is None or coordinator.report.status in ENDED_OR_ABSENT):
        problem = "member 0 does not report a running job"
    if problem is None:
        try:
            figures = coordinator.control.export(coordinator.report.job_id, name)
        except JobControlError as error:
            problem = str(error)
        else:
            entry = history_entry(figures, name, nonce, now)
            exports["history"].append(entry)
            exports["total"] += 1
            exports["lastError"] = None
            detail = ", ".join(f"{key} {entry[key]}" for key in ("snapshotId", "bytes", "keys") if key in entry)
            return exports, JobEvent("SnapshotExported", f"job {entry.get('jobId') or coordinator.report.job_id} "
                                                         f"exported snapshot {entry['name']} ({detail}) for "
                                                         f"spec.snapshot.exportNonce {nonce!r}")
    message = f"export for spec.snapshot.exportNonce {nonce!r} failed: {problem}"
    exports["lastError"] = {"nonce": nonce, "time": format_time(now), "message": message}
    return exports, JobEvent("ExportFailed", message, warning=True)


def _members_until(status: Mapping[str, Any], spec: JetJobSpec) -> str | None:
    """A finished job's ``membersUntil`` under a changed ``ttlSecondsAfterFinished`` (None: no
    change, or its members are gone already)."""
    finished = parse_time(status.get("completionTime"))
    if not status.get("membersUntil") or finished is None:
        return None
    until = format_time(finished + datetime.timedelta(seconds=spec.ttl_seconds_after_finished))
    return until if until != status.get("membersUntil") else None
