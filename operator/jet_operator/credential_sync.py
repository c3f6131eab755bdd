"""Creating a JetJob's Secrets over the API: each once, never replaced while it exists.

Replacing a token, key or certificate under running members would split the cluster, so an
existing Secret always wins (also when two operator calls race: the loser gets 409 and reads
the winner's). The CA Secret is the one exception: it only mirrors the public ``ca.crt`` of
the members' TLS Secret, so it is applied every time and can never disagree with it.
"""

from __future__ import annotations

from typing import Any, Mapping

from jet_operator import constants, naming
from jet_operator.certificates import issue_member_tls
from jet_operator.credentials import (
    build_ca_secret,
    build_member_key_secret,
    build_member_tls_secret,
    build_token_secret,
    new_cluster_token,
    new_member_key,
    secret_text,
)
from jet_operator.kube import KubeApi, KubeError
from jet_operator.ownership import JobRef
from jet_operator.spec import JetJobSpec


def ensure_credentials(api: KubeApi, job: JobRef, spec: JetJobSpec) -> None:
    """Create whichever of the job's Secrets is missing: the cluster token, the member key and,
    with TLS on, the members' TLS Secret and its CA mirror."""
    create_once(api, build_token_secret(job, new_cluster_token()))
    create_once(api, build_member_key_secret(job, new_member_key()))
    if spec.tls_enabled:
        ensure_member_tls(api, job, spec.replicas)


def ensure_member_tls(api: KubeApi, job: JobRef, replicas: int) -> None:
    """Issue the members' TLS Secret if there is none, then mirror its CA into the CA Secret."""
    name = naming.member_tls_secret_name(job.name)
    existing = api.get("Secret", job.namespace, name)
    if existing is None:
        # Certificates are issued only when missing: key generation is not free.
        issued = build_member_tls_secret(job, issue_member_tls(job.name, job.namespace, replicas))
        existing = create_once(api, issued)
    api.apply(build_ca_secret(job, secret_text(existing, constants.CA_CERT_KEY)))


def create_once(api: KubeApi, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """Create ``obj`` unless an object of its name exists; returns the object that is there now."""
    meta = obj["metadata"]
    try:
        api.create(obj)
        return obj
    except KubeError as error:
        if error.status != 409:
            raise
    existing = api.get(obj["kind"], meta["namespace"], meta["name"])
    if existing is None:
        raise KubeError(409, "Conflict", f"{obj['kind']} {meta['name']!r} was deleted while being created")
    return existing

