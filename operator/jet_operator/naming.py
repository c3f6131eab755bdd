"""Names, DNS names and labels of a JetJob's children (pure, deterministic)."""

from __future__ import annotations

from jet_operator import constants


def statefulset_name(job: str) -> str:
    """The members' StatefulSet; its pods are ``<job>-member-<index>``."""
    return f"{job}-member"


def service_name(job: str) -> str:
    """The headless Service that gives every member pod a stable DNS name."""
    return f"{job}-member"


def token_secret_name(job: str) -> str:
    """The Secret holding the cluster token every member and driver presents."""
    return f"{job}-token"


def member_key_secret_name(job: str) -> str:
    """The Secret holding the key members prove their index with (mounted by members only)."""
    return f"{job}-member-key"


def member_tls_secret_name(job: str) -> str:
    """The Secret holding the members' certificate, its private key and the CA (members only)."""
    return f"{job}-tls"


def ca_secret_name(job: str) -> str:
    """The Secret holding only the CA certificate, for clients such as Spark drivers and executors."""
    return f"{job}-ca"


def secret_names(job: str) -> list[str]:
    """Every Secret the operator may create for ``job``."""
    return [token_secret_name(job), member_key_secret_name(job), member_tls_secret_name(job),
            ca_secret_name(job)]


def member_config_name(job: str) -> str:
    """The ConfigMap holding ``member.yaml``."""
    return f"{job}-config"


def pipeline_config_map_name(job: str) -> str:
    """The ConfigMap holding inline pipeline code."""
    return f"{job}-pipeline"


def spark_driver_name(job: str, component: str) -> str:
    """The Spark driver pod of one kind (``spark-source`` or ``spark-sink``)."""
    return f"{job}-{component}"


def spark_account_name(job: str) -> str:
    """The ServiceAccount, Role and RoleBinding the operator makes for a job's Spark drivers."""
    return f"{job}-spark"


def member_host(job: str, namespace: str, index: int) -> str:
    """The DNS name of member ``index`` behind the headless Service."""
    pod = f"{statefulset_name(job)}-{index}"
    return f"{pod}.{service_name(job)}.{namespace}.svc.{constants.CLUSTER_DOMAIN}"


def peers_pattern(job: str, namespace: str) -> str:
    """The ``--peers`` value: member DNS names with ``{i}`` standing for the member index."""
    return f"dns:{member_host(job, namespace, 0).replace('-0.', '-{i}.', 1)}:{constants.MEMBER_PORT}"


def member_addresses(job: str, namespace: str, replicas: int) -> list[str]:
    """Every member's ``host:port``, in index order."""
    return [f"{member_host(job, namespace, i)}:{constants.MEMBER_PORT}" for i in range(replicas)]


def labels(job: str, component: str) -> dict[str, str]:
    """The full label set of a child of ``job`` playing ``component``."""
    return {
        constants.LABEL_NAME: constants.APP_NAME,
        constants.LABEL_INSTANCE: job,
        constants.LABEL_COMPONENT: component,
        constants.LABEL_MANAGED_BY: constants.MANAGED_BY,
        constants.LABEL_PART_OF: constants.APP_NAME,
        constants.LABEL_JETJOB_NAME: job,
        constants.LABEL_JET_COMPONENT: component,
    }


def selector_labels(job: str, component: str) -> dict[str, str]:
    """The stable subset of :func:`labels` used in selectors (never changes for a job)."""
    return {
        constants.LABEL_JETJOB_NAME: job,
        constants.LABEL_JET_COMPONENT: component,
    }


def selector_string(selector: dict[str, str]) -> str:
    """A label selector in the ``a=b,c=d`` form the API and ``status.selector`` use."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
