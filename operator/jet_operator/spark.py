"""Pure builders of a JetJob's Spark side: driver pods and the RBAC their executors need.

When ``spec.spark`` is set the operator runs two driver pods, ``jet spark-source`` and
``jet spark-sink``; each handles every Spark stage of its kind in the pipeline and starts its
executors on Kubernetes (client mode: the driver is the pod, executors are pods it creates).

A driver finds the job's Spark vertices on the members by the job's id, which member 0's
coordinator chooses when it submits the job: the operator creates the drivers once member 0
has reported that id, and passes it as ``--job-id``.

A streaming job's drivers are the same pods and commands: a driver finds the pipeline's
stream stages (``Sources.spark_stream``, ``Sinks.spark_stream``) itself and runs their
Structured Streaming queries for as long as the stream or the job runs, so it is long-lived
and not expected to complete while the job runs (no deadline, no liveness probe; it logs a
progress line per query every 30 s). A driver that fails fails the JetJob with the end of its
log, as for batch; a stream source's driver whose query ended (``available_now``) succeeds
while the job goes on; the sink's driver stops its query once the job's sink has completed.
"""

from __future__ import annotations

from typing import Any

from jet_operator import constants, naming
from jet_operator.builders import (
    JobRef,
    attempt_annotations,
    container_security_context,
    jet_env,
    jet_volumes,
    object_meta,
    pod_security_context,
)
from jet_operator.credentials import spark_credentials, spark_executor_credentials_conf
from jet_operator.spec import JetJobSpec, SparkSpec

# What Spark's driver does in its namespace: executor pods, their services, config maps, PVCs.
SPARK_RULES = [
    {
        "apiGroups": [""],
        "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
    },
]


def spark_image(spec: JetJobSpec) -> str:
    """The image of the Spark drivers and executors (the job's image unless spark.image is set)."""
    assert spec.spark is not None
    return spec.spark.image or spec.image


def spark_conf(job: JobRef, spec: JetJobSpec, component: str, service_account: str) -> dict[str, str]:
    """Spark properties of one driver; the user's ``spark.conf`` wins over these defaults."""
    spark: SparkSpec = spec.spark or SparkSpec()
    driver = naming.spark_driver_name(job.name, component)
    conf = {
        "spark.app.name": driver,
        "spark.kubernetes.container.image": spark_image(spec),
        "spark.kubernetes.container.image.pullPolicy": spec.image_pull_policy,
        "spark.kubernetes.namespace": job.namespace,
        # Executors get the driver pod as owner, so deleting the driver deletes them.
        "spark.kubernetes.driver.pod.name": "$(POD_NAME)",
        "spark.kubernetes.authenticate.driver.serviceAccountName": service_account,
        "spark.kubernetes.executor.podNamePrefix": driver,
        "spark.driver.host": "$(POD_IP)",
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.port": str(constants.SPARK_DRIVER_PORT),
        "spark.driver.blockManager.port": str(constants.SPARK_BLOCK_MANAGER_PORT),
        "spark.executor.instances": str(spark.executor_instances),
        "spark.executor.cores": str(spark.executor_cores),
        "spark.executor.memory": spark.executor_memory,
        # A pod's log is read as lines (kubectl logs, the termination message): no progress bars.
        "spark.ui.showConsoleProgress": "false",
        # Executors talk to the members too: same credentials as their driver, same hash seed.
        **spark_executor_credentials_conf(job, spec),
        "spark.executorEnv.PYTHONHASHSEED": constants.PYTHON_HASH_SEED,
    }
    for key, value in naming.labels(job.name, component).items():
        conf[f"spark.kubernetes.executor.label.{key}"] = value
    conf.update(spark.conf)
    return conf


def spark_driver_args(
    job: JobRef, spec: JetJobSpec, component: str, service_account: str, job_id: str
) -> list[str]:
    """The driver container's arguments after ``jet``: ``jet spark-source``/``spark-sink`` of
    the running job ``job_id`` (the id member 0 reports)."""
    if not job_id:
        raise ValueError(f"Spark driver {component} of JetJob {job.name!r}: the job id is empty")
    args = [
        component,
        "--job-id", job_id,
        "--pipeline", spec.pipeline.file,
        "--entrypoint", spec.pipeline.entrypoint,
        "--members", ",".join(naming.member_addresses(job.name, job.namespace, spec.replicas)),
        "--token-file", constants.TOKEN_FILE,
        "--master", constants.SPARK_MASTER,
    ]
    for key, value in sorted(spark_conf(job, spec, component, service_account).items()):
        args += ["--conf", f"{key}={value}"]
    if spec.pipeline.args:
        args += ["--", *spec.pipeline.args]
    return args


def build_spark_driver_pod(
    job: JobRef, spec: JetJobSpec, component: str, service_account: str, job_id: str, attempt: int = 0
) -> dict[str, Any]:
    """One Spark driver pod (``component`` is ``spark-source`` or ``spark-sink``) of the running
    job ``job_id``."""
    assert spec.spark is not None, "Spark drivers exist only for jobs with spec.spark"
    credentials = spark_credentials(job, spec)
    volumes, mounts = jet_volumes(job, spec, credentials)
    container: dict[str, Any] = {
        "name": constants.SPARK_DRIVER_CONTAINER,
        "image": spark_image(spec),
        "imagePullPolicy": spec.image_pull_policy,
        "command": [constants.JET_COMMAND],
        "args": spark_driver_args(job, spec, component, service_account, job_id),
        "env": jet_env() + credentials.env,
        "ports": [
            {"name": "driver", "containerPort": constants.SPARK_DRIVER_PORT},
            {"name": "blockmanager", "containerPort": constants.SPARK_BLOCK_MANAGER_PORT},
        ],
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
        # A failed driver's last log lines become its termination message: the JetJob's error.
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if spec.spark.driver_resources:
        container["resources"] = dict(spec.spark.driver_resources)
    metadata = object_meta(job, naming.spark_driver_name(job.name, component), component)
    metadata["annotations"] = {**attempt_annotations(job, attempt), constants.ANNOTATION_JOB_ID: job_id}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "serviceAccountName": service_account,
            "restartPolicy": "Never",
            "containers": [container],
            "volumes": volumes,
            "securityContext": pod_security_context(),
        },
    }


def build_spark_service_account(job: JobRef) -> dict[str, Any]:
    """The ServiceAccount the Spark drivers of ``job`` run as."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": object_meta(job, naming.spark_account_name(job.name), constants.COMPONENT_SPARK_SOURCE),
    }


def build_spark_role(job: JobRef) -> dict[str, Any]:
    """The Role with only what a Spark driver needs in the job's namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": object_meta(job, naming.spark_account_name(job.name), constants.COMPONENT_SPARK_SOURCE),
        "rules": SPARK_RULES,
    }


def build_spark_role_binding(job: JobRef) -> dict[str, Any]:
    """Binds :func:`build_spark_role` to :func:`build_spark_service_account`."""
    name = naming.spark_account_name(job.name)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": object_meta(job, name, constants.COMPONENT_SPARK_SOURCE),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": job.namespace}],
    }
