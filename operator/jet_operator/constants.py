"""Names and numbers shared by the operator, its builders and its tests (one place for all)."""

from typing import Final

from jet.contract import (  # noqa: F401
                          API_GROUP,
                          API_VERSION,
                          DEFAULT_ENTRYPOINT,
                          DEFAULT_IMAGE,
                          ENV_CLUSTER_TOKEN_FILE,
                          ENV_MEMBER_KEY_FILE,
                          ENV_TLS_CA_FILE,
                          ENV_TLS_CERT_FILE,
                          ENV_TLS_KEY_FILE,
                          HEALTH_PATH,
                          JOB_PATH,
                          KIND,
                          MEMBER_HTTP_PORT,
                          MEMBER_PORT,
)

PLURAL: Final = "jetjobs"
SHORT_NAME: Final = "jjob"

FINALIZER: Final = f"{API_GROUP}/finalizer"
FIELD_MANAGER: Final = "jet-operator"

# Recommended labels (app.kubernetes.io/*) plus our own under the API group.
LABEL_NAME: Final = "app.kubernetes.io/name"
LABEL_INSTANCE: Final = "app.kubernetes.io/instance"
LABEL_COMPONENT: Final = "app.kubernetes.io/component"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
LABEL_PART_OF: Final = "app.kubernetes.io/part-of"
LABEL_JETJOB_NAME: Final = f"{API_GROUP}/jetjob-name"
LABEL_JET_COMPONENT: Final = f"{API_GROUP}/component"
APP_NAME: Final = "jet"
MANAGED_BY: Final = "jet-operator"

COMPONENT_MEMBER: Final = "member"
COMPONENT_SPARK_SOURCE: Final = "spark-source"
COMPONENT_SPARK_SINK: Final = "spark-sink"
SPARK_COMPONENTS: Final = (COMPONENT_SPARK_SOURCE, COMPONENT_SPARK_SINK)

# Pod-template annotations that tell the current attempt's pods from an older attempt's.
ANNOTATION_GENERATION: Final = f"{API_GROUP}/generation"
ANNOTATION_ATTEMPT: Final = f"{API_GROUP}/attempt"
ANNOTATION_JOB_ID: Final = f"{API_GROUP}/job-id"  # on Spark driver pods: the job they serve

# The member process contract (see docs/operator.md).
MEMBER_CONTAINER: Final = "member"
JET_COMMAND: Final = "jet"
PYTHON_HASH_SEED: Final = "0"

CLUSTER_DOMAIN: Final = "cluster.local"

# The Secrets' keys and where pods mount them (the paths travel in the JET_* variables below).
TOKEN_KEY: Final = "token"
TOKEN_DIR: Final = "/var/run/jet/token"
TOKEN_FILE: Final = f"{TOKEN_DIR}/{TOKEN_KEY}"
MEMBER_KEY_KEY: Final = "member-key"
MEMBER_KEY_DIR: Final = "/var/run/jet/member-key"
MEMBER_KEY_FILE: Final = f"{MEMBER_KEY_DIR}/{MEMBER_KEY_KEY}"
TLS_CERT_KEY: Final = "tls.crt"
TLS_PRIVATE_KEY_KEY: Final = "tls.key"
CA_CERT_KEY: Final = "ca.crt"
MEMBER_TLS_DIR: Final = "/var/run/jet/tls"
CA_DIR: Final = "/var/run/jet/ca"

# The environment the member and client processes read their credentials from.

MEMBER_CONFIG_KEY: Final = "member.yaml"
MEMBER_CONFIG_FILE: Final = f"/etc/jet/{MEMBER_CONFIG_KEY}"
PIPELINE_DIR: Final = "/etc/jet/pipeline"
INLINE_PIPELINE_KEY: Final = "main.py"
TMP_DIR: Final = "/tmp"

# Snapshot storage: a PersistentVolumeClaim is mounted here in every member; the store's URL
# and its credentials reach the members in these variables.
SNAPSHOT_MOUNT_PATH: Final = "/var/lib/jet/snapshots"
ENV_SNAPSHOT_STORE: Final = "JET_SNAPSHOT_STORE"
ENV_SNAPSHOT_STORE_ENDPOINT: Final = "JET_SNAPSHOT_STORE_ENDPOINT"
# Keys of a snapshotStorage.credentialsSecret, each becoming the variable of the same name
# (the optional ones may be missing from the Secret).
AWS_REQUIRED_KEYS: Final = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
AWS_OPTIONAL_KEYS: Final = ("AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN")

SPARK_DRIVER_CONTAINER: Final = "driver"
SPARK_MASTER: Final = "k8s://https://kubernetes.default.svc"
SPARK_DRIVER_PORT: Final = 7078
SPARK_BLOCK_MANAGER_PORT: Final = 7079

# The non-root user and group of the image (see Dockerfile).
JET_UID: Final = 10001
JET_GID: Final = 10001

