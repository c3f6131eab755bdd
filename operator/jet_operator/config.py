"""The operator's settings: one object, loaded from ``JET_OPERATOR_*`` environment variables."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Mapping

from jet_operator import constants, naming

ENV_PREFIX = "JET_OPERATOR_"


@dataclass(frozen=True)
class OperatorConfig:
    """Every tunable of the operator; each field ``x_y`` is read from ``JET_OPERATOR_X_Y``."""

    # How often the status timer looks at a job's pods and coordinator.
    status_interval_seconds: float = 5.0
    # A member pod Pending (unscheduled or not started) for longer than this fails the job.
    scheduling_timeout_seconds: float = 300.0
    # Member 0's job endpoint; fields: name, namespace, statefulset, service, http_port.
    job_url_template: str = (
        "http://{statefulset}-0.{service}.{namespace}.svc.cluster.local:{http_port}/job"
    )
    job_poll_timeout_seconds: float = 3.0
    # Member 0's gRPC address, where the operator suspends, resumes and cancels jobs; same fields.
    member_address_template: str = (
        "{statefulset}-0.{service}.{namespace}.svc.cluster.local:{port}"
    )
    # Longest wait for a suspend (terminal snapshot) or a savepoint (cancel and export) to finish.
    snapshot_action_timeout_seconds: float = 300.0
    # Every Kubernetes API call the operator makes is bounded by this.
    api_timeout_seconds: float = 10.0
    # Deleting a JetJob never waits longer than this for its children's cleanup.
    cleanup_timeout_seconds: float = 30.0
    # The service account for members and Spark drivers when the JetJob names none.
    job_service_account: str = ""
    # Kopf watch-stream timeouts: short enough that a silently dead stream is replaced.
    watch_server_timeout_seconds: int = 300
    watch_client_timeout_seconds: int = 330
    watch_connect_timeout_seconds: int = 30
    # The lowest level of log records Kopf posts as Kubernetes events.
    posting_level: str = "INFO"
    # Port of the Prometheus /metrics endpoint; 0 serves none.
    metrics_port: int = 0
    # Per JetJob, a ClusterIP Service <name>-dashboard to member 0's HTTP port (its dashboard),
    # and an Ingress to it (the Ingress implies the Service); see jet_operator.dashboard.
    dashboard_service_enabled: bool = False
    dashboard_ingress_enabled: bool = False
    # The Ingress's host and TLS Secret; fields: name (the JetJob's), namespace.
    dashboard_ingress_host: str = ""
    dashboard_ingress_tls_secret: str = ""
    dashboard_ingress_class_name: str = ""
    # A JSON object of strings: the Ingress's annotations.
    dashboard_ingress_annotations: str = "{}"
    # Leader election over a Lease (jet_operator.leader), for more than one replica: a replica
    # waits at startup until it holds the Lease <lease name> in <namespace> (default: the pod's
    # namespace, $POD_NAMESPACE, else "default").
    leader_election: bool = False
    leader_election_namespace: str = ""
    leader_election_lease_name: str = "jet-operator"
    leader_election_lease_seconds: float = 15.0
    leader_election_renew_deadline_seconds: float = 10.0
    leader_election_retry_seconds: float = 2.0
    # While waiting for the lead, answer GET /healthz on this port (Kopf's liveness port: Kopf
    # serves it only after its startup); 0: nothing.
    leader_election_waiting_health_port: int = 0

    def __post_init__(self) -> None:
        if self.dashboard_ingress_enabled and not self.dashboard_ingress_host:
            raise ValueError(f"{ENV_PREFIX}DASHBOARD_INGRESS_HOST: empty, but the dashboard Ingress is "
                             "enabled; expected a host such as '{name}.{namespace}.jet.example.com'")
        for name in ("dashboard_ingress_host", "dashboard_ingress_tls_secret"):
            template = getattr(self, name)
            try:
                template.format(name="job", namespace="default")
            except (AttributeError, KeyError, IndexError, ValueError) as error:
                raise ValueError(f"{ENV_PREFIX}{name.upper()}: {template!r} is not a template over "
                                 f"{{name}} and {{namespace}} ({error!r})") from None
        self.ingress_annotations()  # fails early on bad JSON

    def ingress_annotations(self) -> dict[str, str]:
        """The dashboard Ingress's annotations (``dashboard_ingress_annotations`` parsed)."""
        variable = f"{ENV_PREFIX}DASHBOARD_INGRESS_ANNOTATIONS"
        try:
            annotations = json.loads(self.dashboard_ingress_annotations or "{}")
        except json.JSONDecodeError as error:
            raise ValueError(f"{variable}: not JSON ({error}): {self.dashboard_ingress_annotations!r}") from None
        if not isinstance(annotations, dict) or not all(
                isinstance(key, str) and isinstance(value, str) for key, value in annotations.items()):
            raise ValueError(f"{variable}: expected a JSON object of strings, got "
                             f"{self.dashboard_ingress_annotations!r}")
        return annotations

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "OperatorConfig":
        """Build the config from ``environ`` (default: the process environment)."""
        environ = os.environ if environ is None else environ
        values = {}
        for config_field in dataclasses.fields(cls):
            raw = environ.get(ENV_PREFIX + config_field.name.upper())
            if raw is None or raw == "":
                continue
            values[config_field.name] = _parse(config_field.name, type(config_field.default), raw)
        return cls(**values)

    def dashboard_host(self, job: str, namespace: str) -> str:
        """The host the dashboard Ingress of ``job`` answers on."""
        return self.dashboard_ingress_host.format(name=job, namespace=namespace)

    def dashboard_tls_secret(self, job: str, namespace: str) -> str:
        """The TLS Secret of the dashboard Ingress of ``job`` ("": no TLS)."""
        return self.dashboard_ingress_tls_secret.format(name=job, namespace=namespace)

    def job_url(self, job: str, namespace: str) -> str:
        """The URL of ``job``'s coordinator (member 0) job-status endpoint."""
        return self.job_url_template.format(
            name=job,
            namespace=namespace,
            statefulset=naming.statefulset_name(job),
            service=naming.service_name(job),
            http_port=constants.MEMBER_HTTP_PORT,
        )

    def member_address(self, job: str, namespace: str) -> str:
        """``host:port`` of ``job``'s coordinator (member 0) for Jet clients."""
        return self.member_address_template.format(
            name=job,
            namespace=namespace,
            statefulset=naming.statefulset_name(job),
            service=naming.service_name(job),
            port=constants.MEMBER_PORT,
        )


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off", "")


def _parse(name: str, kind: type, raw: str) -> object:
    """``raw`` as the field's type; a bool is spelled true/false (``bool("false")`` is True)."""
    variable = ENV_PREFIX + name.upper()
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ValueError(f"{variable}: expected true or false, got {raw!r}")
    try:
        return kind(raw)
    except ValueError:
        raise ValueError(f"{variable}: expected {kind.__name__}, got {raw!r}") from None
