"""Pure builders of every Kubernetes object a JetJob's members need (no API calls, no Kopf).

Each ``build_*`` function takes the job's identity (:class:`JobRef`) and its parsed spec and
returns a plain dict ready to send to the API server, owner reference included. Spark drivers
and their RBAC are built in :mod:`jet_operator.spark`, the Secrets and who mounts which in
:mod:`jet_operator.credentials`.
"""

from __future__ import annotations

from typing import Any

import yaml

from jet_operator import constants, naming
from jet_operator.credentials import PodCredentials, member_credentials
from jet_operator.ownership import JobRef, object_meta
from jet_operator.podmerge import merge_pod_template
from jet_operator.spec import JetJobSpec

_CONFIG_VOLUME = "config"
_PIPELINE_VOLUME = "pipeline"
_TMP_VOLUME = "tmp"
_SNAPSHOTS_VOLUME = "snapshots"


def render_member_yaml(spec: JetJobSpec) -> str:
    """The member settings file (``/etc/jet/member.yaml``) the engine reads."""
    settings: dict[str, Any] = {}
    if spec.cooperative_threads is not None:
        settings["cooperative_threads"] = spec.cooperative_threads
    settings["flow_control_period_ms"] = spec.flow_control_period_millis
    if spec.progress_log_interval_seconds is not None:
        settings["progress_log_interval_ms"] = spec.progress_log_interval_seconds * 1000
    settings["edge_defaults"] = {
        "queue_size": spec.edge_defaults.queue_size,
        "packet_size_limit": spec.edge_defaults.packet_size_limit,
        "receive_window_multiplier": spec.edge_defaults.receive_window_multiplier,
    }
    return yaml.safe_dump(settings, sort_keys=True)


def build_member_config(job: JobRef, spec: JetJobSpec) -> dict[str, Any]:
    """The ConfigMap holding ``member.yaml``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(job, naming.member_config_name(job.name), constants.COMPONENT_MEMBER),
        "data": {constants.MEMBER_CONFIG_KEY: render_member_yaml(spec)},
    }


def build_pipeline_config_map(job: JobRef, spec: JetJobSpec) -> dict[str, Any] | None:
    """The ConfigMap holding inline pipeline code, or None when the code comes from elsewhere."""
    if spec.pipeline.code is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": object_meta(
            job, naming.pipeline_config_map_name(job.name), constants.COMPONENT_MEMBER
        ),
        "data": {constants.INLINE_PIPELINE_KEY: spec.pipeline.code},
    }


def build_headless_service(job: JobRef) -> dict[str, Any]:
    """The headless Service behind which members find each other by pod DNS name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(job, naming.service_name(job.name), constants.COMPONENT_MEMBER),
        "spec": {
            "clusterIP": "None",
            # Members must resolve each other before any of them is ready.
            "publishNotReadyAddresses": True,
            "selector": naming.selector_labels(job.name, constants.COMPONENT_MEMBER),
            "ports": [
                {"name": "jet", "port": constants.MEMBER_PORT, "targetPort": "jet"},
                {"name": "http", "port": constants.MEMBER_HTTP_PORT, "targetPort": "http"},
            ],
        },
    }


def member_args(job: JobRef, spec: JetJobSpec, initial_snapshot: str | None = None) -> list[str]:
    """The member container's arguments after ``jet`` (the member process contract).

    The job is named after the JetJob: a member 0 made again finds the job's record in the
    snapshot store under that name and resumes it instead of submitting it anew.

    ``initial_snapshot``: the exported snapshot member 0 starts the job from when the store has
    no record of it (a savepoint upgrade's, else ``spec.initialSnapshotName``)."""
    args = [
        "member",
        "--port", str(constants.MEMBER_PORT),
        "--http-port", str(constants.MEMBER_HTTP_PORT),
        "--peers", naming.peers_pattern(job.name, job.namespace),
        "--replicas", str(spec.replicas),
        "--config", constants.MEMBER_CONFIG_FILE,
        "--job-name", job.name,
        "--pipeline", spec.pipeline.file,
        "--entrypoint", spec.pipeline.entrypoint,
    ]
    if spec.has_guarantee:
        interval_ms = max(1, round(spec.snapshot_interval_seconds * 1000))
        args += ["--processing-guarantee", spec.processing_guarantee,
                 "--snapshot-interval", f"{interval_ms}ms"]
    if initial_snapshot:
        args += ["--initial-snapshot-name", initial_snapshot]
    if spec.pipeline.args:
        args += ["--", *spec.pipeline.args]
    return args


def jet_env() -> list[dict[str, Any]]:
    """Environment every Jet process (member or driver) gets: identity, hash seed (credentials
    come from :mod:`jet_operator.credentials`)."""
    return [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        # Every process must hash str keys alike wherever Python's hash() is used.
        {"name": "PYTHONHASHSEED", "value": constants.PYTHON_HASH_SEED},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]


def jet_volumes(
    job: JobRef, spec: JetJobSpec, credentials: PodCredentials
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Volumes and mounts every Jet container has: its ``credentials``, /tmp and the pipeline
    file (unless the file is inside the image)."""
    volumes = [*credentials.volumes, {"name": _TMP_VOLUME, "emptyDir": {}}]
    mounts = [*credentials.mounts, {"name": _TMP_VOLUME, "mountPath": constants.TMP_DIR}]
    source = spec.pipeline
    if source.path:
        return volumes, mounts
    if source.config_map_name:
        config_map = {
            "name": source.config_map_name,
            "items": [{"key": source.config_map_key, "path": source.config_map_key}],
        }
    else:
        config_map = {"name": naming.pipeline_config_map_name(job.name)}
    volumes.append({"name": _PIPELINE_VOLUME, "configMap": config_map})
    mounts.append({"name": _PIPELINE_VOLUME, "mountPath": constants.PIPELINE_DIR, "readOnly": True})
    return volumes, mounts


def snapshot_storage_env(spec: JetJobSpec) -> list[dict[str, Any]]:
    """The store's URL, endpoint and credentials (keys of the credentials Secret, same names)."""
    storage = spec.snapshot_storage
    if storage is None:
        return []
    env: list[dict[str, Any]] = [{"name": constants.ENV_SNAPSHOT_STORE, "value": storage.store_url}]
    if storage.endpoint:
        env.append({"name": constants.ENV_SNAPSHOT_STORE_ENDPOINT, "value": storage.endpoint})
    if storage.credentials_secret:
        for key, optional in [*((k, False) for k in constants.AWS_REQUIRED_KEYS),
                              *((k, True) for k in constants.AWS_OPTIONAL_KEYS)]:
            reference = {"name": storage.credentials_secret, "key": key, **({"optional": True} if optional else {})}
            env.append({"name": key, "valueFrom": {"secretKeyRef": reference}})
    return env


def snapshot_storage_volume(spec: JetJobSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The PersistentVolumeClaim volume and its mount, when the snapshots live on one."""
    storage = spec.snapshot_storage
    if storage is None or not storage.claim_name:
        return [], []
    return ([{"name": _SNAPSHOTS_VOLUME, "persistentVolumeClaim": {"claimName": storage.claim_name}}],
            [{"name": _SNAPSHOTS_VOLUME, "mountPath": constants.SNAPSHOT_MOUNT_PATH}])


def attempt_annotations(job: JobRef, attempt: int) -> dict[str, str]:
    """Annotations telling the pods of this generation and attempt from older ones."""
    return {
        constants.ANNOTATION_GENERATION: str(job.generation),
        constants.ANNOTATION_ATTEMPT: str(attempt),
    }


def container_security_context() -> dict[str, Any]:
    """Least-privilege container defaults (a podTemplate can loosen them)."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def pod_security_context() -> dict[str, Any]:
    """Pod defaults: non-root, and the image's group owns mounted Secrets and volumes."""
    return {"runAsNonRoot": True, "fsGroup": constants.JET_GID}


def _http_probe(period_seconds: int, failure_threshold: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": constants.HEALTH_PATH, "port": "http"},
        "periodSeconds": period_seconds,
        "failureThreshold": failure_threshold,
    }


def build_member_pod_template(
    job: JobRef, spec: JetJobSpec, attempt: int, service_account: str | None,
    initial_snapshot: str | None = None,
) -> dict[str, Any]:
    """The members' pod template: defaults first, then the user's ``podTemplate`` over them."""
    credentials = member_credentials(job, spec)
    volumes, mounts = jet_volumes(job, spec, credentials)
    snapshot_volumes, snapshot_mounts = snapshot_storage_volume(spec)
    volumes += snapshot_volumes
    mounts += snapshot_mounts
    volumes.append({"name": _CONFIG_VOLUME, "configMap": {"name": naming.member_config_name(job.name)}})
    mounts.append({
        "name": _CONFIG_VOLUME,
        "mountPath": constants.MEMBER_CONFIG_FILE,
        "subPath": constants.MEMBER_CONFIG_KEY,
        "readOnly": True,
    })
    container: dict[str, Any] = {
        "name": constants.MEMBER_CONTAINER,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": [constants.JET_COMMAND],
        "args": member_args(job, spec, initial_snapshot),
        "env": jet_env() + credentials.env + snapshot_storage_env(spec),
        "ports": [
            {"name": "jet", "containerPort": constants.MEMBER_PORT, "protocol": "TCP"},
            {"name": "http", "containerPort": constants.MEMBER_HTTP_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": _http_probe(period_seconds=2, failure_threshold=3),
        "livenessProbe": {**_http_probe(period_seconds=10, failure_threshold=6),
                          "initialDelaySeconds": 10},
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
    }
    if spec.member_resources:
        container["resources"] = dict(spec.member_resources)
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "volumes": volumes,
        "securityContext": pod_security_context(),
        "terminationGracePeriodSeconds": 30,
    }
    if service_account:
        pod_spec["serviceAccountName"] = service_account
    else:
        pod_spec["automountServiceAccountToken"] = False
    defaults = {
        "metadata": {
            "labels": naming.labels(job.name, constants.COMPONENT_MEMBER),
            "annotations": attempt_annotations(job, attempt),
        },
        "spec": pod_spec,
    }
    template = merge_pod_template(defaults, spec.pod_template)
    # The selector labels and attempt markers are the operator's; a podTemplate cannot move them.
    template["metadata"]["labels"].update(naming.selector_labels(job.name, constants.COMPONENT_MEMBER))
    template["metadata"]["annotations"].update(defaults["metadata"]["annotations"])
    return template


def build_statefulset(
    job: JobRef,
    spec: JetJobSpec,
    *,
    replicas: int,
    attempt: int = 0,
    service_account: str | None = None,
    initial_snapshot: str | None = None,
) -> dict[str, Any]:
    """The members' StatefulSet: pod ordinal = member index, all pods started together.

    ``updateStrategy: OnDelete`` because members restart together: the operator deletes every
    pod of an old attempt at once instead of letting a rolling update break the cluster
    one member at a time.
    """
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": object_meta(job, naming.statefulset_name(job.name), constants.COMPONENT_MEMBER),
        "spec": {
            "serviceName": naming.service_name(job.name),
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "OnDelete"},
            "selector": {
                "matchLabels": naming.selector_labels(job.name, constants.COMPONENT_MEMBER)
            },
            "template": build_member_pod_template(job, spec, attempt, service_account, initial_snapshot),
        },
    }
