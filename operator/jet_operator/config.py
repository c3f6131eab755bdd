"""The operator's settings: one object, loaded from ``JET_OPERATOR_*`` environment variables."""

from __future__ import annotations

import dataclasses
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

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "OperatorConfig":
        """Build the config from ``environ`` (default: the process environment)."""
        environ = os.environ if environ is None else environ
        values = {}
        for config_field in dataclasses.fields(cls):
            raw = environ.get(ENV_PREFIX + config_field.name.upper())
            if raw is None or raw == "":
                continue
            kind = type(config_field.default)
            values[config_field.name] = kind(raw)
        return cls(**values)

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
