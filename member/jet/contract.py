"""What the engine and the Kubernetes operator agree on, and all they share.

The operator (``jet_operator``) imports this module and the cluster's client, nothing else of the
engine; the engine never imports the operator. These names are read on both sides: the JetJob
resource's API, the image and entrypoint a manifest defaults to, the members' ports and paths,
and the environment variables that carry the cluster's credentials into a pod.
"""

import re
from typing import Final

API_GROUP: Final = "jet.dev"
API_VERSION: Final = "v1alpha1"
KIND: Final = "JetJob"

DEFAULT_IMAGE: Final = "ghcr.io/jet-on-k8s/jet:0.1.0"
DEFAULT_ENTRYPOINT: Final = "pipeline"
"""The name a job file defines its job under (a Pipeline, a DAG, or a function returning one)."""

MEMBER_PORT: Final = 5701
"""A member's gRPC port (members, clients, the Spark side)."""
MEMBER_HTTP_PORT: Final = 8080
"""A member's HTTP port: health, the job's status, metrics and the dashboard."""
HEALTH_PATH: Final = "/healthz"
JOB_PATH: Final = "/job"

ENV_CLUSTER_TOKEN: Final = "JET_CLUSTER_TOKEN"
ENV_CLUSTER_TOKEN_FILE: Final = "JET_CLUSTER_TOKEN_FILE"
ENV_MEMBER_KEY: Final = "JET_MEMBER_KEY"
ENV_MEMBER_KEY_FILE: Final = "JET_MEMBER_KEY_FILE"
ENV_TLS_CERT_FILE: Final = "JET_TLS_CERT_FILE"
ENV_TLS_KEY_FILE: Final = "JET_TLS_KEY_FILE"
ENV_TLS_CA_FILE: Final = "JET_TLS_CA_FILE"

JOB_NAME_MAX_LENGTH: Final = 45
"""The longest JetJob name: its StatefulSet ``<name>-member`` must leave room in 63 characters for
the ``controller-revision-hash`` label (``<statefulset>-<hash of up to 10 characters>``) that
Kubernetes puts on each member pod."""
JOB_NAME_PATTERN: Final = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
"""A JetJob name is an RFC 1123 DNS label that starts with a letter (an RFC 1035 label): it
prefixes Service names (``<name>-member``), which must start with a letter."""


def job_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a JetJob (naming the value), or None when it can."""
    if not name:
        return "a JetJob name must not be empty"
    if len(name) > JOB_NAME_MAX_LENGTH:
        return (f"JetJob name {name!r} is {len(name)} characters long; at most {JOB_NAME_MAX_LENGTH} "
                f"(its members' StatefulSet {name}-member and their pods' labels must fit in 63)")
    if not re.fullmatch(JOB_NAME_PATTERN, name):
        return (f"JetJob name {name!r} is not a DNS label: use lowercase letters, digits and '-', "
                "starting with a letter and ending with a letter or digit (e.g. "
                f"{_suggest_name(name)!r})")
    return None


def _suggest_name(name: str) -> str:
    suggestion = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    suggestion = re.sub(r"^[^a-z]+", "", suggestion)[:JOB_NAME_MAX_LENGTH].rstrip("-")
    return suggestion or "my-job"
