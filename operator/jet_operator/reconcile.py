"""What the handlers do, over the Kubernetes API: start a spec generation, follow the job,
restart it, clean up. Each step returns a :class:`StatusUpdate` for the handler to write.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from jet.contract import job_name_problem

from jet_operator import constants, naming
from jet_operator.builders import JobRef
from jet_operator.children import build_children, spark_service_account
from jet_operator.config import OperatorConfig
from jet_operator.credential_sync import ensure_credentials
from jet_operator.dashboard import build_dashboard_children, dashboard_address, dashboard_cleanup_targets
from jet_operator.exports import (
    deleted_message, exports_status, members_may_answer, not_deleted_message, prune, without_deleted,
)
from jet_operator.finish import finish_fields, members_expired
from jet_operator.generations import cluster_token, find_coordinator, prepare_generation
from jet_operator.jobclient import fetch_job_report
from jet_operator.jobcontrol import ExportDeletion, JobControlError
from jet_operator.kube import KubeApi, KubeError
from jet_operator.lifecycle import (
    ENDED_JOB_STATUSES,
    TERMINAL_PHASES,
    JobReport,
    Phase,
    PodView,
    assess,
    build_conditions,
    decide_restart,
    format_time,
    parse_time,
)
from jet_operator.spark import build_spark_driver_pod
from jet_operator.spec import JetJobSpec, spec_problems

logger = logging.getLogger(__name__)

# A namespace being deleted answers 403 (forbidden to create) or 409 (conflict); gone is 404.
CLEANUP_TOLERATED_STATUSES = (403, 404, 409)


@dataclass(frozen=True)
class JobEvent:
    """A Kubernetes event about the JetJob."""

    reason: str
    message: str
    warning: bool = False
    phase: bool = False
    """Whether it reports a phase change (``reason`` is the new phase)."""


@dataclass
class StatusUpdate:
    """Fields to merge into ``status`` and the events to post (a phase change, a restart, ...)."""

    status: dict[str, Any] = field(default_factory=dict)
    events: list[JobEvent] = field(default_factory=list)


def check_references(api: KubeApi, job: JobRef, spec: JetJobSpec) -> list[str]:
    """Problems the schema cannot see (or an API server without its CEL rules let through): a
    name the children cannot be named after, objects the spec names that do not exist."""
    name_problem = job_name_problem(job.name)
    problems = ([f"metadata.name: {name_problem}"] if name_problem else []) + spec_problems(spec)
    storage = spec.snapshot_storage
    if storage is not None and storage.claim_name and api.get(
            "PersistentVolumeClaim", job.namespace, storage.claim_name) is None:
        problems.append(f"spec.snapshotStorage.persistentVolumeClaim: PersistentVolumeClaim "
                        f"{storage.claim_name!r} not found in namespace {job.namespace!r}")
    if storage is not None and storage.credentials_secret:
        secret = api.get("Secret", job.namespace, storage.credentials_secret)
        if secret is None:
            problems.append(f"spec.snapshotStorage.credentialsSecret: Secret {storage.credentials_secret!r} "
                            f"not found in namespace {job.namespace!r}")
        else:
            missing = [k for k in constants.AWS_REQUIRED_KEYS
                       if k not in (secret.get("data") or {}) and k not in (secret.get("stringData") or {})]
            if missing:
                problems.append(f"spec.snapshotStorage.credentialsSecret: Secret {storage.credentials_secret!r} "
                                f"has no key {', '.join(missing)}")
    return problems + _pipeline_reference_problems(api, job, spec)


def _pipeline_reference_problems(api: KubeApi, job: JobRef, spec: JetJobSpec) -> list[str]:
    source = spec.pipeline
    if not source.config_map_name:
        return []
    config_map = api.get("ConfigMap", job.namespace, source.config_map_name)
    if config_map is None:
        return [
            f"spec.pipeline.configMapRef: ConfigMap {source.config_map_name!r} "
            f"not found in namespace {job.namespace!r}"
        ]
    if source.config_map_key not in (config_map.get("data") or {}):
        return [
            f"spec.pipeline.configMapRef.key: ConfigMap {source.config_map_name!r} "
            f"has no key {source.config_map_key!r}"
        ]
    return []


def phase_update(
    phase: Phase,
    message: str,
    status: Mapping[str, Any],
    generation: int,
    now: datetime.datetime,
    restarting: bool = False,
    events: Sequence[JobEvent] = (),
    **fields: Any,
) -> StatusUpdate:
    """The status fields for ``phase``, with an event if the phase or message changed (after
    ``events``, which happened first)."""
    new_status: dict[str, Any] = {
        "phase": phase.value,
        "message": message,
        "observedGeneration": generation,
        "conditions": build_conditions(
            phase, message, status.get("conditions") or [], generation, now, restarting
        ),
        **fields,
    }
    update = StatusUpdate(new_status, list(events))
    if status.get("phase") != phase.value or (phase == Phase.FAILED and status.get("message") != message):
        update.events.append(JobEvent(phase.value, message, warning=phase == Phase.FAILED, phase=True))
    return update


def _members_fields(job: JobRef, desired: int, ready: int) -> dict[str, Any]:
    selector = naming.selector_string(naming.selector_labels(job.name, constants.COMPONENT_MEMBER))
    return {
        "members": {"desired": desired, "ready": ready},
        "membersReady": f"{ready}/{desired}",
        "selector": selector,
    }


def start_generation(
    api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
    status: Mapping[str, Any], now: datetime.datetime, spec_hash: str | None = None,
) -> StatusUpdate:
    """Bring the children in line with a new spec generation (create, spec change, resume).

    Members of an older generation are deleted together, so the job restarts on the new spec.
    ``spec_hash`` (:func:`jet_operator.nonces.generation_hash`) goes to ``status.specHash``: a
    later change of the action fields alone is then carried out without a new generation.
    The spec's nonces count as handled (the job starts anew anyway).
    """
    problems = check_references(api, job, spec)
    if problems:
        stop_members(api, job)
        return phase_update(Phase.FAILED, "; ".join(problems), status, job.generation, now,
                            **_members_fields(job, spec.replicas, 0))
    start = prepare_generation(api, config, job, spec, status)  # before the members change
    ensure_credentials(api, job, spec)
    running = not spec.suspended
    for child in build_children(
        job, spec,
        member_replicas=spec.replicas if running else 0,
        attempt=0,
        default_account=config.job_service_account,
        initial_snapshot=start.initial_snapshot,
    ) + build_dashboard_children(job, config):
        api.apply(child)
    delete_stale_pods(api, job, attempt=0)
    common = dict(restartCount=0, retriesUsed=0, restartAt=None, jobId=None, completionTime=None,
                  result=None, membersUntil=None, sparkJobs=[], suspended=not running,
                  startSnapshot=start.initial_snapshot, membersGeneration=job.generation, specHash=spec_hash,
                  nonces={"restart": spec.restart_nonce, "export": spec.snapshot.export_nonce},
                  dashboard=dashboard_address(job, config),
                  **_members_fields(job, spec.replicas if running else 0, 0))
    if start.upgrade is not None:
        common["upgrade"] = start.upgrade
    note = f"; {start.note}" if start.note else ""
    if not running:
        delete_spark_drivers(api, job)
        return phase_update(Phase.SUSPENDED, f"suspended by spec.suspend{note}", status, job.generation, now,
                            **common)
    return phase_update(Phase.PENDING, f"members created{note}", status, job.generation, now,
                        startTime=None, **common)


def stop_members(api: KubeApi, job: JobRef) -> None:
    """Scale members to 0 and remove Spark drivers, if the job has any children yet."""
    if api.get("StatefulSet", job.namespace, naming.statefulset_name(job.name)) is not None:
        scale_members(api, job, 0)
    delete_spark_drivers(api, job)


def scale_members(api: KubeApi, job: JobRef, replicas: int) -> None:
    """Set the members' StatefulSet to ``replicas`` pods."""
    api.patch("StatefulSet", job.namespace, naming.statefulset_name(job.name),
              {"spec": {"replicas": replicas}})


def _job_pods(api: KubeApi, job: JobRef) -> list[dict[str, Any]]:
    return api.list("Pod", job.namespace, f"{constants.LABEL_JETJOB_NAME}={job.name}")


def _component(pod: Mapping[str, Any]) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(constants.LABEL_JET_COMPONENT, "")


def _annotation(pod: Mapping[str, Any], key: str) -> str | None:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(key)


def _is_current(pod: Mapping[str, Any], job: JobRef, attempt: int) -> bool:
    return (_annotation(pod, constants.ANNOTATION_GENERATION) == str(job.generation)
            and _annotation(pod, constants.ANNOTATION_ATTEMPT) == str(attempt))


def delete_stale_pods(api: KubeApi, job: JobRef, attempt: int) -> None:
    """Delete the job's pods of an older generation or attempt (all at once: a cluster restart)."""
    for pod in _job_pods(api, job):
        if not _is_current(pod, job, attempt):
            api.delete("Pod", job.namespace, pod["metadata"]["name"])


def delete_spark_drivers(api: KubeApi, job: JobRef) -> None:
    """Delete both Spark driver pods (their executors go with them)."""
    for component in constants.SPARK_COMPONENTS:
        api.delete("Pod", job.namespace, naming.spark_driver_name(job.name, component))


def restart(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
            status: Mapping[str, Any], now: datetime.datetime,
            observed_generation: int | None = None) -> StatusUpdate:
    """Start the job again on the same spec: a new attempt, every pod replaced. ``job`` carries
    the members' generation; ``observed_generation`` (default the same) the JetJob's."""
    attempt = int(status.get("restartCount") or 0) + 1
    ensure_credentials(api, job, spec)  # e.g. a job started by an operator that made fewer Secrets
    children = build_children(job, spec, member_replicas=spec.replicas, attempt=attempt,
                              default_account=config.job_service_account,
                              initial_snapshot=status.get("startSnapshot"))
    for child in children + build_dashboard_children(job, config):
        api.apply(child)
    delete_stale_pods(api, job, attempt)
    return phase_update(
        Phase.PENDING, f"restarted (restart {attempt})", status, observed_generation or job.generation, now,
        restartCount=attempt, restartAt=None, jobId=None, completionTime=None, startTime=None,
        result=None, membersUntil=None,
        **_members_fields(job, spec.replicas, 0),
    )


def sync_spark_drivers(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
                       attempt: int, pods: list[dict[str, Any]], report: JobReport | None) -> None:
    """Give the job member 0 reports as running the current attempt's Spark driver pods.

    Drivers are created only once the job has an id (they find its Spark vertices by it); a
    driver serving another job id (member 0 submitted the job again) is deleted, and made
    again for the new id once it is gone."""
    if spec.spark is None or report is None or not report.job_id or report.status in ENDED_JOB_STATUSES:
        return
    existing = {pod["metadata"]["name"]: pod for pod in pods}
    account = spark_service_account(job, spec, config.job_service_account)
    for component in constants.SPARK_COMPONENTS:
        name = naming.spark_driver_name(job.name, component)
        driver = existing.get(name)
        if driver is not None:
            if _annotation(driver, constants.ANNOTATION_JOB_ID) != report.job_id:
                api.delete("Pod", job.namespace, name)
            continue
        try:
            api.create(build_spark_driver_pod(job, spec, component, account, report.job_id, attempt))
        except KubeError as error:
            if error.status != 409:  # the old pod is still terminating: next tick
                raise


def follow(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
           status: Mapping[str, Any], now: datetime.datetime,
           observed_generation: int | None = None) -> StatusUpdate | None:
    """One look at a job: its pods and its coordinator; returns the new status, if any.

    ``job`` carries the generation the members were made for (``status.membersGeneration``),
    ``observed_generation`` the JetJob's (default the same): a change of action fields alone
    moves the second, not the first."""
    observed = observed_generation or job.generation
    update = _follow(api, config, job, spec, status, now, observed)
    exports, events = retire_exports(api, config, job, spec, exports_status(status), status, now)
    if exports is not None:
        update = update or StatusUpdate()
        update.status["snapshotExports"] = exports
        update.events.extend(events)
    return update


def retire_exports(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec, exports: Mapping[str, Any],
                   status: Mapping[str, Any], now: datetime.datetime) -> tuple[dict[str, Any] | None, list[JobEvent]]:
    """Bound the export history (:func:`jet_operator.exports.prune` decides) and delete the
    exports out of it from the store through member 0 (``job``: as the members know it).
    Returns the new ``snapshotExports`` (None: unchanged) and the events: the exports deleted;
    a Warning for those that just left the history and could not be deleted (they stay in
    ``notDeleted``, tried again at each later look while the members may answer)."""
    pruned = prune(exports, spec.snapshot, now)
    waiting = pruned.exports["notDeleted"]
    if not waiting:
        return (pruned.exports if pruned.exports != exports else None), []
    deletion = _delete_exports(api, config, job, spec, status, waiting)
    retired = without_deleted(pruned.exports, deletion.deleted)
    events = []
    if deletion.deleted:
        events.append(JobEvent("ExportsDeleted", deleted_message(deletion.deleted, deletion.gone, spec.snapshot)))
    new = [name for name in pruned.expired if name in retired["notDeleted"]]
    if new:
        events.append(JobEvent("ExportsNotDeleted", not_deleted_message(new, deletion.error or "", spec.snapshot),
                               warning=True))
    elif retired["notDeleted"]:  # warned about when they left the history: a log line, not an event a look
        logger.info("%s/%s: exported snapshot(s) %s not deleted yet: %s", job.namespace, job.name,
                    ", ".join(retired["notDeleted"]), deletion.error)
    return (retired if retired != exports else None), events


def _delete_exports(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
                    status: Mapping[str, Any], names: list[str]) -> ExportDeletion:
    if not members_may_answer(status):
        return ExportDeletion([], [], f"the job's members are not running (phase {status.get('phase')})")
    coordinator = find_coordinator(api, config, job, spec)
    if coordinator is None:
        return ExportDeletion([], [], "member 0 does not answer")
    return coordinator.control.delete_exports(names)


def _follow(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
            status: Mapping[str, Any], now: datetime.datetime, observed: int) -> StatusUpdate | None:
    phase = Phase(status.get("phase") or Phase.PENDING.value)
    if spec.suspended or phase == Phase.SUSPENDED:
        return None  # only a spec change moves a suspended job
    if phase in TERMINAL_PHASES:
        restart_at = parse_time(status.get("restartAt"))
        if restart_at is not None and now >= restart_at:
            return restart(api, config, job, spec, status, now, observed)
        if members_expired(status, now):
            return release_members(api, job, spec, phase.value)
        return None

    attempt = int(status.get("restartCount") or 0)
    pods = [pod for pod in _job_pods(api, job) if _is_current(pod, job, attempt)]
    members = [PodView.of(p) for p in pods if _component(p) == constants.COMPONENT_MEMBER]
    drivers = [p for p in pods if _component(p) in constants.SPARK_COMPONENTS]
    ready = sum(1 for pod in members if pod.ready)
    report = None
    if members and ready == spec.replicas:
        token = cluster_token(api, job)
        if token is not None:
            report = fetch_job_report(config.job_url(job.name, job.namespace), config.job_poll_timeout_seconds,
                                      token)
    events: list[JobEvent] = []
    if report is not None and report.status == "SUSPENDED":
        report, resumed = _resume(api, config, job, spec, report)
        events += resumed
    if report is not None and report.job_id == status.get("jobId") and report.restarts > int(
            status.get("restarts") or 0):
        events.append(restart_event(report))
    assessment = assess(
        desired=spec.replicas, member_pods=members, spark_pods=[PodView.of(p) for p in drivers],
        job=report, now=now, scheduling_timeout_seconds=config.scheduling_timeout_seconds,
    )
    fields: dict[str, Any] = {
        **_members_fields(job, spec.replicas, assessment.ready),
        "sparkJobs": [_spark_job(pod) for pod in drivers],
        "dashboard": dashboard_address(job, config),
    }
    if report is not None:
        fields["jobId"] = report.job_id or None
        fields["startTime"] = report.start_time or status.get("startTime")
        fields.update(report.status_fields())
    if assessment.phase not in TERMINAL_PHASES:
        sync_spark_drivers(api, config, job, spec, attempt, drivers, report)
        return phase_update(assessment.phase, assessment.message, status, observed, now, events=events,
                            **fields)

    retries_used = int(status.get("retriesUsed") or 0)
    decision = decide_restart(spec.restart_policy, retries_used, assessment.phase)
    keep = not decision.restart and spec.ttl_seconds_after_finished > 0
    if not keep:
        scale_members(api, job, 0)  # else they stay for kubectl logs until membersUntil
    if assessment.phase == Phase.FAILED:
        if keep:  # a driver still running stops; one that ended keeps its log until membersUntil
            for pod in drivers:
                if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    api.delete("Pod", job.namespace, pod["metadata"]["name"])
        else:
            delete_spark_drivers(api, job)
    message = assessment.message
    fields["completionTime"] = (report.completion_time if report and report.completion_time
                                else format_time(now))
    if decision.restart:
        message = f"{message}; {decision.message}"
        fields["restartAt"] = format_time(now + datetime.timedelta(seconds=decision.delay_seconds))
        fields["retriesUsed"] = decision.retries_used
    else:
        fields.update(finish_fields(assessment.phase, assessment.message, report, status,
                                    fields["completionTime"], spec.ttl_seconds_after_finished, now))
    return phase_update(assessment.phase, message, status, observed, now,
                        restarting=decision.restart, events=events, **fields)


def release_members(api: KubeApi, job: JobRef, spec: JetJobSpec, status_phase: str) -> StatusUpdate:
    """A finished job's ``spec.ttlSecondsAfterFinished`` ran out: scale its members to 0 (the
    StatefulSet stays, empty; ``status.result`` keeps the outcome) and delete a failed job's
    Spark drivers that ended."""
    scale_members(api, job, 0)
    if Phase(status_phase) == Phase.FAILED:
        delete_spark_drivers(api, job)
    return StatusUpdate(
        {"membersUntil": None, **_members_fields(job, 0, 0)},
        [JobEvent("MembersRemoved", f"spec.ttlSecondsAfterFinished ({spec.ttl_seconds_after_finished}s) ran out: "
                                    f"members scaled to 0 (status.result keeps the outcome)")],
    )


def restart_event(report: JobReport) -> JobEvent:
    """The Warning that the job's coordinator restarted it (a lost member, a new member 0)."""
    resumed = ("it continues from its last snapshot" if report.processing_guarantee not in (None, "NONE")
               else "it starts again from the beginning (no processing guarantee)")
    cause = report.last_restart_cause or "no cause given"
    return JobEvent("Restarted", f"job {report.job_id} restarted (restart {report.restarts}): {cause}; {resumed}",
                    warning=True)


def _spark_job(pod: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": pod["metadata"]["name"],
        "component": _component(pod),
        "phase": (pod.get("status") or {}).get("phase") or "Pending",
    }


def cleanup(api: KubeApi, config: OperatorConfig, job: JobRef) -> list[str]:
    """Delete every child of a deleted JetJob; never raises and never takes longer than the
    configured cleanup timeout (a terminating namespace answers 403/409: that is fine).

    Returns what could not be deleted, for the log.
    """
    deadline = time.monotonic() + config.cleanup_timeout_seconds
    children = [
        ("Pod", naming.spark_driver_name(job.name, constants.COMPONENT_SPARK_SOURCE)),
        ("Pod", naming.spark_driver_name(job.name, constants.COMPONENT_SPARK_SINK)),
        *dashboard_cleanup_targets(job.name, config),
        ("StatefulSet", naming.statefulset_name(job.name)),
        ("Service", naming.service_name(job.name)),
        ("ConfigMap", naming.pipeline_config_map_name(job.name)),
        ("ConfigMap", naming.member_config_name(job.name)),
        *(("Secret", name) for name in naming.secret_names(job.name)),
        ("RoleBinding", naming.spark_account_name(job.name)),
        ("Role", naming.spark_account_name(job.name)),
        ("ServiceAccount", naming.spark_account_name(job.name)),
    ]
    left: list[str] = []
    for kind, name in children:
        if time.monotonic() > deadline:
            left.append(f"{kind}/{name}: cleanup timeout")
            continue
        try:
            api.delete(kind, job.namespace, name, tolerate=CLEANUP_TOLERATED_STATUSES)
        except Exception as error:  # noqa: BLE001 - deletion must finish whatever happens here
            left.append(f"{kind}/{name}: {error}")
    return left


def _resume(api: KubeApi, config: OperatorConfig, job: JobRef, spec: JetJobSpec,
            report: JobReport) -> tuple[JobReport, list[JobEvent]]:
    """A job SUSPENDED while its spec says to run (resumed by the user, or suspended by its
    coordinator): resume it from its last snapshot. The returned report shows it resuming;
    the event says so."""
    coordinator = find_coordinator(api, config, job, spec)
    if coordinator is None:
        return report, []
    try:
        coordinator.control.resume(report.job_id)
    except JobControlError as error:
        logger.warning("%s/%s: %s", job.namespace, job.name, error)
        return report, []
    snapshot = (report.last_snapshot or {}).get("id")
    source = f"snapshot {snapshot}" if snapshot is not None else "its last snapshot"
    cause = f"; suspension cause: {report.message}" if report.message else ""
    return (dataclasses.replace(report, status="STARTING", message=f"resuming from {source}"),
            [JobEvent("Resumed", f"job {report.job_id} resumes from {source}{cause}")])
