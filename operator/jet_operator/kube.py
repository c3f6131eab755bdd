"""A small Kubernetes API client over plain dicts (built on the ``kubernetes`` package's auth).

Objects travel as the JSON the API serves, never as generated model classes, so the builders'
dicts go to the server unchanged. Every call is bounded by a timeout.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Iterable, Mapping

import kubernetes.client
import kubernetes.config
from kubernetes.client.exceptions import ApiException

from jet_operator import constants

logger = logging.getLogger(__name__)

# kind -> (API prefix, plural) for every kind the operator touches.
_RESOURCES: dict[str, tuple[str, str]] = {
    "Pod": ("/api/v1", "pods"),
    "Service": ("/api/v1", "services"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "Secret": ("/api/v1", "secrets"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "Ingress": ("/apis/networking.k8s.io/v1", "ingresses"),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases"),
    constants.KIND: (f"/apis/{constants.API_GROUP}/{constants.API_VERSION}", constants.PLURAL),
}

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class KubeError(Exception):
    """An API call answered with an error status."""

    def __init__(self, status: int, reason: str, body: str = "") -> None:
        super().__init__(f"{status} {reason}: {body[:500]}")
        self.status = status
        self.reason = reason


def load_client_configuration() -> kubernetes.client.Configuration:
    """In-cluster credentials when running in a pod, else the kubeconfig (as Kopf logs in)."""
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        # The kubernetes package reads $KUBECONFIG once, at import; read it now.
        kubernetes.config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return kubernetes.client.Configuration.get_default_copy()


def resource_path(kind: str, namespace: str, name: str | None = None, subresource: str | None = None) -> str:
    """The REST path of a namespaced collection, object or subresource."""
    prefix, plural = _RESOURCES[kind]
    path = f"{prefix}/namespaces/{namespace}/{plural}"
    if name is not None:
        path += f"/{name}"
    if subresource is not None:
        path += f"/{subresource}"
    return path


class KubeApi:
    """Create, apply, read, list and delete namespaced objects given as dicts."""

    def __init__(self, configuration: kubernetes.client.Configuration, timeout_seconds: float) -> None:
        self._client = kubernetes.client.ApiClient(configuration)
        self._timeout = timeout_seconds

    def close(self) -> None:
        """Release the connection pool."""
        self._client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One API call; raises :class:`KubeError` on an error status."""
        method, url, headers, body, _ = self._client.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self._client.call_api(method, url, headers, body, _request_timeout=self._timeout)
        except ApiException as error:
            raise KubeError(error.status or 0, error.reason or "", str(error.body or "")) from None
        data = response.read()
        if response.status >= 400:
            raise KubeError(response.status, response.reason or "", data.decode(errors="replace"))
        return json.loads(data) if data else {}

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST a new object; raises KubeError(409) if it exists."""
        meta = obj["metadata"]
        return self.request("POST", resource_path(obj["kind"], meta["namespace"]), body=obj)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Server-side apply: create the object or make it match ``obj`` (fields we own only)."""
        meta = obj["metadata"]
        return self.request(
            "PATCH",
            resource_path(obj["kind"], meta["namespace"], meta["name"]),
            query={"fieldManager": constants.FIELD_MANAGER, "force": "true"},
            body=obj,
            content_type=APPLY_PATCH,
        )

    def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
              subresource: str | None = None) -> dict[str, Any]:
        """JSON merge patch of an object (or of its subresource, e.g. ``status``)."""
        return self.request(
            "PATCH", resource_path(kind, namespace, name, subresource), body=patch, content_type=MERGE_PATCH
        )

    def json_patch(self, kind: str, namespace: str, name: str, operations: list[Mapping[str, Any]]) -> dict[str, Any]:
        """JSON patch (RFC 6902) of an object: a failed ``test`` operation answers 422."""
        return self.request("PATCH", resource_path(kind, namespace, name), body=list(operations),
                            content_type=JSON_PATCH)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None if it does not exist."""
        try:
            return self.request("GET", resource_path(kind, namespace, name))
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
        """Objects of ``kind`` in ``namespace`` matching a label selector."""
        query = {"labelSelector": selector} if selector else None
        return list(self.request("GET", resource_path(kind, namespace), query=query).get("items") or [])

    def delete(self, kind: str, namespace: str, name: str, tolerate: Iterable[int] = (404,)) -> bool:
        """Delete an object in the background; False if it was already gone (or a tolerated error)."""
        try:
            self.request(
                "DELETE",
                resource_path(kind, namespace, name),
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            )
            return True
        except KubeError as error:
            if error.status in set(tolerate):
                logger.debug("Deleting %s %s/%s: %s (tolerated)", kind, namespace, name, error)
                return False
            raise
