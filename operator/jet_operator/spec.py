"""The JetJob spec as typed values, with the same defaults as the CRD schema.

The API server applies the CRD defaults, but the operator does not rely on it (an older CRD,
an emulator in tests): every default is applied here too, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from jet_operator import constants

RESTART_NEVER = "Never"
RESTART_ON_FAILURE = "OnFailure"
RESTART_ALWAYS = "Always"
GUARANTEE_NONE = "none"
GUARANTEES = (GUARANTEE_NONE, "at-least-once", "exactly-once")
UPGRADE_STATELESS = "stateless"
UPGRADE_SAVEPOINT = "savepoint"
UPGRADE_LAST_STATE = "last-state"
UPGRADE_MODES = (UPGRADE_STATELESS, UPGRADE_SAVEPOINT, UPGRADE_LAST_STATE)
DEFAULT_SNAPSHOT_INTERVAL_SECONDS = 10.0
DEFAULT_TTL_SECONDS_AFTER_FINISHED = 300
# Flink's defaults for its savepoint history.
DEFAULT_EXPORT_HISTORY_MAX_COUNT = 10
DEFAULT_EXPORT_HISTORY_MAX_AGE_SECONDS = 86400


@dataclass(frozen=True)
class PipelineSource:
    """Where the pipeline file comes from: exactly one of inline code, a ConfigMap key or a path."""

    code: str | None = None
    config_map_name: str | None = None
    config_map_key: str | None = None
    path: str | None = None
    entrypoint: str = constants.DEFAULT_ENTRYPOINT
    args: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        """The pipeline file as the member container sees it."""
        if self.path:
            return self.path
        if self.config_map_name:
            return f"{constants.PIPELINE_DIR}/{self.config_map_key}"
        return f"{constants.PIPELINE_DIR}/{constants.INLINE_PIPELINE_KEY}"


@dataclass(frozen=True)
class EdgeDefaults:
    """The engine's EdgeConfig defaults for every edge of the job (Jet's, but the queue size:
    the engine's queues hold whole chunks, see ``jet.core.edge.DEFAULT_QUEUE_SIZE``)."""

    queue_size: int = 16384
    packet_size_limit: int = 16384
    receive_window_multiplier: int = 3


@dataclass(frozen=True)
class RestartPolicy:
    """When the operator restarts a job: Never, OnFailure or Always (also after completion)."""

    type: str = RESTART_NEVER
    max_retries: int = 3
    backoff_seconds: int = 10


@dataclass(frozen=True)
class SparkSpec:
    """The Spark drivers' settings; present only for jobs with Spark sources or sinks."""

    image: str | None = None
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "1g"
    driver_resources: Mapping[str, Any] = field(default_factory=dict)
    conf: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SnapshotStorage:
    """Where the members keep job records and snapshots: a URL (``s3://...``, with credentials
    from a Secret) or a PersistentVolumeClaim mounted into every member."""

    url: str | None = None
    credentials_secret: str | None = None
    endpoint: str | None = None
    claim_name: str | None = None
    path: str = ""

    @property
    def store_url(self) -> str:
        """The store URL the members get (``$JET_SNAPSHOT_STORE``)."""
        if self.url:
            return self.url
        return f"{constants.SNAPSHOT_MOUNT_PATH}/{self.path}".rstrip("/")


@dataclass(frozen=True)
class SnapshotExports:
    """``spec.snapshot``: exports asked for by a nonce, and how many of them the status keeps
    (Flink's ``savepointTriggerNonce``, ``savepointHistoryMaxCount`` and ``MaxAge``)."""

    export_nonce: str | None = None
    """A change of this value asks the job for an exported snapshot (None: never asked)."""
    history_max_count: int = DEFAULT_EXPORT_HISTORY_MAX_COUNT
    history_max_age_seconds: int = DEFAULT_EXPORT_HISTORY_MAX_AGE_SECONDS
    """0: no age limit."""


@dataclass(frozen=True)
class JetJobSpec:
    """A JetJob's spec with defaults applied."""

    image: str
    pipeline: PipelineSource
    image_pull_policy: str = "IfNotPresent"
    service_account_name: str | None = None
    replicas: int = 2
    member_resources: Mapping[str, Any] = field(default_factory=dict)
    pod_template: Mapping[str, Any] = field(default_factory=dict)
    cooperative_threads: int | None = None
    edge_defaults: EdgeDefaults = EdgeDefaults()
    flow_control_period_millis: int = 100
    progress_log_interval_seconds: int | None = None
    """How often a streaming job's members log their progress (None: the members' default)."""
    spark: SparkSpec | None = None
    restart_policy: RestartPolicy = RestartPolicy()
    suspend: bool = False
    """The user asks for the job to be suspended (with a terminal snapshot when it has a guarantee)."""
    tls_enabled: bool = True
    """Members speak TLS with certificates the operator issues; clients verify them with its CA."""
    processing_guarantee: str = GUARANTEE_NONE
    snapshot_interval_seconds: float = DEFAULT_SNAPSHOT_INTERVAL_SECONDS
    snapshot_storage: SnapshotStorage | None = None
    initial_snapshot_name: str | None = None
    upgrade_mode: str = UPGRADE_STATELESS
    ttl_seconds_after_finished: int = DEFAULT_TTL_SECONDS_AFTER_FINISHED
    """How long a finished job (Completed or Failed, no restart to come) keeps its member pods."""
    restart_nonce: str | None = None
    """A change of this value restarts the job (None: never asked)."""
    snapshot: SnapshotExports = SnapshotExports()
    allow_non_restored_state: bool = False
    """A spec change may start the new spec without the running job's state when its savepoint
    fails (see :mod:`jet_operator.generations`)."""

    @property
    def suspended(self) -> bool:
        """Whether the user asked for the job to be suspended."""
        return self.suspend

    @property
    def has_guarantee(self) -> bool:
        """Whether the job takes snapshots (at-least-once or exactly-once)."""
        return self.processing_guarantee != GUARANTEE_NONE


def parse_spec(spec: Mapping[str, Any]) -> JetJobSpec:
    """Read a JetJob's ``spec`` (a plain mapping, as Kopf gives it) into a :class:`JetJobSpec`."""
    pipeline = spec.get("pipeline") or {}
    config_map_ref = pipeline.get("configMapRef") or {}
    members = spec.get("members") or {}
    edges = spec.get("edgeDefaults") or {}
    restart = spec.get("restartPolicy") or {}
    return JetJobSpec(
        image=spec.get("image") or constants.DEFAULT_IMAGE,
        image_pull_policy=spec.get("imagePullPolicy") or "IfNotPresent",
        service_account_name=spec.get("serviceAccountName") or None,
        pipeline=PipelineSource(
            code=pipeline.get("code"),
            config_map_name=config_map_ref.get("name"),
            config_map_key=config_map_ref.get("key") or constants.INLINE_PIPELINE_KEY,
            path=pipeline.get("path"),
            entrypoint=pipeline.get("entrypoint") or constants.DEFAULT_ENTRYPOINT,
            args=tuple(str(arg) for arg in pipeline.get("args") or ()),
        ),
        replicas=int(members.get("replicas", 2)),
        member_resources=dict(members.get("resources") or {}),
        pod_template=dict(members.get("podTemplate") or {}),
        cooperative_threads=spec.get("cooperativeThreads"),
        edge_defaults=EdgeDefaults(
            queue_size=int(edges.get("queueSize", EdgeDefaults.queue_size)),
            packet_size_limit=int(edges.get("packetSizeLimit", EdgeDefaults.packet_size_limit)),
            receive_window_multiplier=int(
                edges.get("receiveWindowMultiplier", EdgeDefaults.receive_window_multiplier)
            ),
        ),
        flow_control_period_millis=int(spec.get("flowControlPeriodMillis", 100)),
        progress_log_interval_seconds=_optional_int(spec.get("progressLogIntervalSeconds"),
                                                    "spec.progressLogIntervalSeconds", minimum=0),
        spark=_parse_spark(spec.get("spark")),
        restart_policy=RestartPolicy(
            type=restart.get("type", RESTART_NEVER),
            max_retries=int(restart.get("maxRetries", RestartPolicy.max_retries)),
            backoff_seconds=int(restart.get("backoffSeconds", RestartPolicy.backoff_seconds)),
        ),
        suspend=_bool(spec.get("suspend", False), "spec.suspend"),
        tls_enabled=_tls_enabled(spec.get("tls")),
        processing_guarantee=_choice(spec.get("processingGuarantee", GUARANTEE_NONE),
                                     "spec.processingGuarantee", GUARANTEES),
        snapshot_interval_seconds=_positive_number(
            spec.get("snapshotIntervalSeconds", DEFAULT_SNAPSHOT_INTERVAL_SECONDS), "spec.snapshotIntervalSeconds"),
        snapshot_storage=_parse_snapshot_storage(spec.get("snapshotStorage")),
        initial_snapshot_name=spec.get("initialSnapshotName") or None,
        upgrade_mode=_choice(spec.get("upgradeMode", UPGRADE_STATELESS), "spec.upgradeMode", UPGRADE_MODES),
        ttl_seconds_after_finished=_with_default(
            _optional_int(spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished", minimum=0),
            DEFAULT_TTL_SECONDS_AFTER_FINISHED),
        restart_nonce=_nonce(spec.get("restartNonce")),
        snapshot=_parse_snapshot_exports(spec.get("snapshot")),
        allow_non_restored_state=_bool(spec.get("allowNonRestoredState", False), "spec.allowNonRestoredState"),
    )


def spec_problems(spec: JetJobSpec) -> list[str]:
    """What the CRD's CEL rules refuse, checked again here (an API server without them, an
    object stored before them): every feature that keeps state needs ``snapshotStorage``."""
    if spec.snapshot_storage is not None:
        return []
    needs = [
        (spec.has_guarantee, f"spec.processingGuarantee {spec.processing_guarantee!r}"),
        (spec.upgrade_mode != UPGRADE_STATELESS, f"spec.upgradeMode {spec.upgrade_mode!r}"),
        (spec.initial_snapshot_name is not None, "spec.initialSnapshotName"),
        (spec.snapshot.export_nonce is not None, "spec.snapshot.exportNonce"),
    ]
    return [f"{what} needs spec.snapshotStorage (where the job's snapshots are kept)"
            for needed, what in needs if needed]


def _bool(value: Any, field_name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{field_name} must be true or false, got {value!r}")
    return value


def _choice(value: Any, field_name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{field_name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _positive_number(value: Any, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{field_name} must be a number > 0, got {value!r}")
    return float(value)


def _parse_snapshot_storage(storage: Any) -> SnapshotStorage | None:
    if storage is None:
        return None
    if not isinstance(storage, Mapping):
        raise ValueError(f"spec.snapshotStorage must be an object, got {storage!r}")
    claim = storage.get("persistentVolumeClaim")
    url = storage.get("url")
    if bool(url) == bool(claim):
        raise ValueError("spec.snapshotStorage needs exactly one of url and persistentVolumeClaim")
    path = str(storage.get("path") or "").strip("/")
    if ".." in path.split("/"):
        raise ValueError(f"spec.snapshotStorage.path must stay inside the volume, got {path!r}")
    return SnapshotStorage(
        url=url or None,
        credentials_secret=storage.get("credentialsSecret") or None,
        endpoint=storage.get("endpoint") or None,
        claim_name=(claim or {}).get("claimName") or None,
        path=path,
    )


def _optional_int(value: Any, field_name: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{field_name} must be an integer >= {minimum}, got {value!r}")
    return value


def _nonce(value: Any) -> str | None:
    """A nonce as the status records it: any int or string, compared as text."""
    return None if value is None else str(value)


def _parse_snapshot_exports(snapshot: Any) -> SnapshotExports:
    if snapshot is None:
        return SnapshotExports()
    if not isinstance(snapshot, Mapping):
        raise ValueError(f"spec.snapshot must be an object, got {snapshot!r}")
    return SnapshotExports(
        export_nonce=_nonce(snapshot.get("exportNonce")),
        history_max_count=_with_default(_optional_int(snapshot.get("historyMaxCount"),
                                                      "spec.snapshot.historyMaxCount", minimum=1),
                                        DEFAULT_EXPORT_HISTORY_MAX_COUNT),
        history_max_age_seconds=_with_default(_optional_int(snapshot.get("historyMaxAgeSeconds"),
                                                            "spec.snapshot.historyMaxAgeSeconds", minimum=0),
                                              DEFAULT_EXPORT_HISTORY_MAX_AGE_SECONDS),
    )


def _with_default(value: Any, default: Any) -> Any:
    return default if value is None else value


def _tls_enabled(tls: Any) -> bool:
    if tls is None:
        return True
    if not isinstance(tls, Mapping):
        raise ValueError(f"spec.tls must be an object, got {tls!r}")
    enabled = tls.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValueError(f"spec.tls.enabled must be true or false, got {enabled!r}")
    return enabled


def _parse_spark(spark: Mapping[str, Any] | None) -> SparkSpec | None:
    if spark is None:
        return None
    executor = spark.get("executor") or {}
    driver = spark.get("driver") or {}
    return SparkSpec(
        image=spark.get("image") or None,
        executor_instances=int(executor.get("instances", SparkSpec.executor_instances)),
        executor_cores=int(executor.get("cores", SparkSpec.executor_cores)),
        executor_memory=str(executor.get("memory", SparkSpec.executor_memory)),
        driver_resources=dict(driver.get("resources") or {}),
        conf={str(k): str(v) for k, v in (spark.get("conf") or {}).items()},
    )
