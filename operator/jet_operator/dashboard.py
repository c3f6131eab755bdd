"""The way to a JetJob's web dashboard: a Service to member 0 and an optional Ingress to it.

Every member serves the dashboard on its HTTP port, but only member 0 (the coordinator) shows
the whole cluster, so the Service selects pod ``<job>-member-0`` by the label the StatefulSet
controller puts on each pod. Both are children of the JetJob (owner reference), made when the
chart turns them on (:class:`~jet_operator.config.OperatorConfig` ``dashboard_*``).
"""

from __future__ import annotations

from typing import Any

from jet_operator import constants, naming
from jet_operator.config import OperatorConfig
from jet_operator.ownership import JobRef, object_meta

COMPONENT_DASHBOARD = "dashboard"
#: The label the StatefulSet controller gives each of its pods: the pod's own name.
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
HTTP_PORT_NAME = "http"


def dashboard_name(job: str) -> str:
    """The dashboard Service and Ingress of ``job``."""
    return f"{job}-dashboard"


def coordinator_pod_name(job: str) -> str:
    """Member 0's pod: the StatefulSet's pod of ordinal 0."""
    return f"{naming.statefulset_name(job)}-0"


def build_dashboard_service(job: JobRef) -> dict[str, Any]:
    """A ClusterIP Service to member 0's HTTP port (``/``: the dashboard, ``/metrics``)."""
    selector = {**naming.selector_labels(job.name, constants.COMPONENT_MEMBER),
                POD_NAME_LABEL: coordinator_pod_name(job.name)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": object_meta(job, dashboard_name(job.name), COMPONENT_DASHBOARD),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": HTTP_PORT_NAME, "port": constants.MEMBER_HTTP_PORT,
                       "targetPort": HTTP_PORT_NAME, "protocol": "TCP"}],
        },
    }


def build_dashboard_ingress(job: JobRef, config: OperatorConfig) -> dict[str, Any]:
    """An Ingress on the configured host (TLS if a Secret is configured) to the dashboard Service."""
    host = config.dashboard_host(job.name, job.namespace)
    metadata = object_meta(job, dashboard_name(job.name), COMPONENT_DASHBOARD)
    annotations = config.ingress_annotations()
    if annotations:
        metadata["annotations"] = annotations
    backend = {"service": {"name": dashboard_name(job.name), "port": {"name": HTTP_PORT_NAME}}}
    spec: dict[str, Any] = {
        "rules": [{"host": host, "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": backend}]}}],
    }
    if config.dashboard_ingress_class_name:
        spec["ingressClassName"] = config.dashboard_ingress_class_name
    tls_secret = config.dashboard_tls_secret(job.name, job.namespace)
    if tls_secret:
        spec["tls"] = [{"hosts": [host], "secretName": tls_secret}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}


def build_dashboard_children(job: JobRef, config: OperatorConfig) -> list[dict[str, Any]]:
    """The Service (with the Service or the Ingress on) and the Ingress (with it on), in order."""
    children = []
    if config.dashboard_service_enabled or config.dashboard_ingress_enabled:
        children.append(build_dashboard_service(job))
    if config.dashboard_ingress_enabled:
        children.append(build_dashboard_ingress(job, config))
    return children


def dashboard_cleanup_targets(job: str, config: OperatorConfig) -> list[tuple[str, str]]:
    """(kind, name) of the dashboard children a deleted JetJob may have."""
    targets = [("Service", dashboard_name(job))]
    if config.dashboard_ingress_enabled:
        targets.insert(0, ("Ingress", dashboard_name(job)))
    return targets


def dashboard_address(job: JobRef, config: OperatorConfig) -> dict[str, str]:
    """``status.dashboard``: where member 0's web dashboard answers (``url``: the Ingress's,
    else the dashboard Service's, else member 0's own DNS name; the last two inside the
    cluster) and a ``portForward`` command that reaches it from a workstation."""
    pod = coordinator_pod_name(job.name)
    port = constants.MEMBER_HTTP_PORT
    if config.dashboard_ingress_enabled:
        scheme = "https" if config.dashboard_tls_secret(job.name, job.namespace) else "http"
        url = f"{scheme}://{config.dashboard_host(job.name, job.namespace)}/"
    elif config.dashboard_service_enabled:
        url = f"http://{dashboard_name(job.name)}.{job.namespace}.svc.{constants.CLUSTER_DOMAIN}:{port}/"
    else:
        url = f"http://{naming.member_host(job.name, job.namespace, 0)}:{port}/"
    return {"url": url, "portForward": f"kubectl port-forward -n {job.namespace} pod/{pod} {port}:{port}"}
