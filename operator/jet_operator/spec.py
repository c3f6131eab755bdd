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
STATE_RUNNING = "running"
STATE_SUSPENDED = "suspended"


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
    """Jet's EdgeConfig defaults for every edge of the job."""

    queue_size: int = 1024
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
    state: str = STATE_RUNNING
    tls_enabled: bool = True
    """Members speak TLS with certificates the operator issues; clients verify them with its CA."""

    @property
    def suspended(self) -> bool:
        """Whether the user asked for the job to be suspended."""
        return self.state == STATE_SUSPENDED


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
        state=spec.get("state", STATE_RUNNING),
        tls_enabled=_tls_enabled(spec.get("tls")),
    )


def _optional_int(value: Any, field_name: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{field_name} must be an integer >= {minimum}, got {value!r}")
    return value


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
