"""A JetJob's Secrets and which pods get which of them (pure builders, no API calls).

Three identities, three Secrets (the fourth only mirrors a public certificate):

- ``<job>-token``: the cluster token; whoever presents it is a *client* (members, Spark drivers
  and executors all hold it);
- ``<job>-member-key``: the key a member proves its index with; members only;
- ``<job>-tls``: the members' certificate and private key, with the CA that signed it; members only;
- ``<job>-ca``: the CA certificate alone, so Spark pods can verify members without ever
  receiving a private key or the member key.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from typing import Any, Mapping

from jet_operator import constants, naming
from jet_operator.certificates import MemberTls
from jet_operator.ownership import JobRef, object_meta
from jet_operator.spec import JetJobSpec

TOKEN_VOLUME = "token"
MEMBER_KEY_VOLUME = "member-key"
MEMBER_TLS_VOLUME = "tls"
CA_VOLUME = "ca"
# Readable by the pod's fsGroup, nobody else.
SECRET_FILE_MODE = 0o440


@dataclass
class PodCredentials:
    """The volumes, mounts and environment that hand a pod its share of the job's Secrets."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    env: list[dict[str, Any]] = field(default_factory=list)

    def add_secret(self, volume: str, secret_name: str, directory: str, env: Mapping[str, str]) -> None:
        """Mount Secret ``secret_name`` read-only at ``directory`` and set ``env`` (name -> file)."""
        self.volumes.append({"name": volume,
                             "secret": {"secretName": secret_name, "defaultMode": SECRET_FILE_MODE}})
        self.mounts.append({"name": volume, "mountPath": directory, "readOnly": True})
        self.env += [{"name": name, "value": value} for name, value in env.items()]


def new_cluster_token() -> str:
    """A fresh random cluster token."""
    return secrets.token_urlsafe(32)


def new_member_key() -> str:
    """A fresh random member key (256 bits, URL-safe text so the file needs no decoding)."""
    return secrets.token_urlsafe(32)


def _secret(job: JobRef, name: str, secret_type: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": object_meta(job, name, constants.COMPONENT_MEMBER),
        "type": secret_type,
        "data": {key: base64.b64encode(value.encode("utf-8")).decode("ascii") for key, value in data.items()},
    }


def build_token_secret(job: JobRef, token: str) -> dict[str, Any]:
    """The Secret with the cluster token; members and Spark pods mount it read-only."""
    return _secret(job, naming.token_secret_name(job.name), "Opaque", {constants.TOKEN_KEY: token})


def build_member_key_secret(job: JobRef, member_key: str) -> dict[str, Any]:
    """The Secret with the member key; only member pods mount it."""
    return _secret(job, naming.member_key_secret_name(job.name), "Opaque",
                   {constants.MEMBER_KEY_KEY: member_key})


def build_member_tls_secret(job: JobRef, tls: MemberTls) -> dict[str, Any]:
    """The members' TLS Secret (``tls.crt``, ``tls.key``, ``ca.crt``); only member pods mount it."""
    return _secret(job, naming.member_tls_secret_name(job.name), "kubernetes.io/tls", {
        constants.TLS_CERT_KEY: tls.cert_pem,
        constants.TLS_PRIVATE_KEY_KEY: tls.key_pem,
        constants.CA_CERT_KEY: tls.ca_cert_pem,
    })


def build_ca_secret(job: JobRef, ca_cert_pem: str) -> dict[str, Any]:
    """The Secret with only ``ca.crt``, for Spark pods (a Secret because Spark can mount only
    Secrets into executors)."""
    return _secret(job, naming.ca_secret_name(job.name), "Opaque", {constants.CA_CERT_KEY: ca_cert_pem})


def secret_text(secret: Mapping[str, Any], key: str) -> str:
    """The value of ``key`` in a Secret as the API serves it (base64 ``data``); a clear
    error naming the Secret when the key is missing."""
    data = secret.get("data") or {}
    if key not in data:
        name = (secret.get("metadata") or {}).get("name")
        raise KeyError(f"Secret {name!r} has no key {key!r} (keys: {sorted(data)})")
    return base64.b64decode(data[key]).decode("utf-8")


def member_credentials(job: JobRef, spec: JetJobSpec) -> PodCredentials:
    """A member's share: the cluster token, the member key and, with TLS on, the member TLS Secret."""
    credentials = _token_credentials(job)
    credentials.add_secret(
        MEMBER_KEY_VOLUME, naming.member_key_secret_name(job.name), constants.MEMBER_KEY_DIR,
        {constants.ENV_MEMBER_KEY_FILE: constants.MEMBER_KEY_FILE},
    )
    if spec.tls_enabled:
        directory = constants.MEMBER_TLS_DIR
        credentials.add_secret(MEMBER_TLS_VOLUME, naming.member_tls_secret_name(job.name), directory, {
            constants.ENV_TLS_CERT_FILE: f"{directory}/{constants.TLS_CERT_KEY}",
            constants.ENV_TLS_KEY_FILE: f"{directory}/{constants.TLS_PRIVATE_KEY_KEY}",
            constants.ENV_TLS_CA_FILE: f"{directory}/{constants.CA_CERT_KEY}",
        })
    return credentials


def spark_credentials(job: JobRef, spec: JetJobSpec) -> PodCredentials:
    """A Spark driver's share: the cluster token and, with TLS on, the CA certificate alone."""
    credentials = _token_credentials(job)
    if spec.tls_enabled:
        credentials.add_secret(CA_VOLUME, naming.ca_secret_name(job.name), constants.CA_DIR,
                               {constants.ENV_TLS_CA_FILE: _ca_file()})
    return credentials


def spark_executor_credentials_conf(job: JobRef, spec: JetJobSpec) -> dict[str, str]:
    """Spark properties giving executors the same share as their driver (same paths)."""
    conf = {
        f"spark.kubernetes.executor.secrets.{naming.token_secret_name(job.name)}": constants.TOKEN_DIR,
        f"spark.executorEnv.{constants.ENV_CLUSTER_TOKEN_FILE}": constants.TOKEN_FILE,
    }
    if spec.tls_enabled:
        conf[f"spark.kubernetes.executor.secrets.{naming.ca_secret_name(job.name)}"] = constants.CA_DIR
        conf[f"spark.executorEnv.{constants.ENV_TLS_CA_FILE}"] = _ca_file()
    return conf


def _token_credentials(job: JobRef) -> PodCredentials:
    credentials = PodCredentials()
    credentials.add_secret(TOKEN_VOLUME, naming.token_secret_name(job.name), constants.TOKEN_DIR,
                           {constants.ENV_CLUSTER_TOKEN_FILE: constants.TOKEN_FILE})
    return credentials


def _ca_file() -> str:
    return f"{constants.CA_DIR}/{constants.CA_CERT_KEY}"
