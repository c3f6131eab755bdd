"""What the engine and the Kubernetes operator agree on, and all they share.

The operator (``jet_operator``) imports this module and the cluster's client, nothing else of the
engine; the engine never imports the operator. These names are read on both sides: the JetJob
resource's API, the image and entrypoint a manifest defaults to, the members' ports and paths,
and the environment variables that carry the cluster's credentials into a pod.
"""

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
