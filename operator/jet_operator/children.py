"""The full set of children one JetJob should have, in the order they are applied."""

from __future__ import annotations

from typing import Any

from jet_operator import naming, spark
from jet_operator.builders import (
    JobRef,
    build_headless_service,
    build_member_config,
    build_pipeline_config_map,
    build_statefulset,
)
from jet_operator.spec import JetJobSpec


def member_service_account(spec: JetJobSpec, default_account: str) -> str | None:
    """The account members run as: the JetJob's own, else the operator's default, else none."""
    return spec.service_account_name or default_account or None


def spark_service_account(job: JobRef, spec: JetJobSpec, default_account: str) -> str:
    """The account Spark drivers run as; the per-job one the operator creates if none is named."""
    return member_service_account(spec, default_account) or naming.spark_account_name(job.name)


def builds_spark_rbac(spec: JetJobSpec, default_account: str) -> bool:
    """Whether the operator makes a ServiceAccount, Role and RoleBinding for the Spark drivers."""
    return spec.spark is not None and member_service_account(spec, default_account) is None


def build_children(
    job: JobRef,
    spec: JetJobSpec,
    *,
    member_replicas: int,
    attempt: int = 0,
    default_account: str = "",
    initial_snapshot: str | None = None,
) -> list[dict[str, Any]]:
    """Every child known before the job runs, dependencies first: all but the Secrets (created
    once by :mod:`jet_operator.credential_sync`) and the Spark driver pods (they need the id
    member 0 gives the job: see :mod:`jet_operator.spark`).

    ``member_replicas`` is 0 while the job is suspended or finished; ``initial_snapshot`` is
    the exported snapshot member 0 starts a job the store has no record of from.
    """
    children: list[dict[str, Any]] = []
    if builds_spark_rbac(spec, default_account):
        children += [
            spark.build_spark_service_account(job),
            spark.build_spark_role(job),
            spark.build_spark_role_binding(job),
        ]
    children.append(build_member_config(job, spec))
    pipeline = build_pipeline_config_map(job, spec)
    if pipeline is not None:
        children.append(pipeline)
    children.append(build_headless_service(job))
    children.append(
        build_statefulset(
            job,
            spec,
            replicas=member_replicas,
            attempt=attempt,
            service_account=member_service_account(spec, default_account),
            initial_snapshot=initial_snapshot,
        )
    )
    return children
