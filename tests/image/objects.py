"""An in-memory object store with the operator's ``KubeApi`` methods, so the operator's own
reconcile step can create a JetJob's children (Secrets included) without an API server."""

from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping

from jet_operator.kube import KubeError

Key = tuple[str, str, str]


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def _matches(obj: Mapping[str, Any], selector: str | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in (selector or "").split(","):
        if term:
            name, _, value = term.partition("=")
            if labels.get(name) != value:
                return False
    return True


class ObjectStore:
    """What the operator created, applied and deleted: ``objects`` by (kind, namespace, name)."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        for obj in objects:
            self.apply(obj)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``obj``; 409 if one of its name exists."""
        if _key(obj) in self.objects:
            raise KubeError(409, "AlreadyExists", f"{_key(obj)}")
        return self.apply(obj)

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``obj``, replacing one of its name."""
        self.objects[_key(obj)] = copy.deepcopy(dict(obj))
        return self.objects[_key(obj)]

    def patch(self, kind: str, namespace: str, name: str, patch: Mapping[str, Any],
              **_: Any) -> dict[str, Any]:
        """Merge ``patch`` into the top level of the object's sections (enough for ``spec``)."""
        obj = self.objects[kind, namespace, name]
        for section, fields in patch.items():
            obj.setdefault(section, {}).update(fields)
        return obj

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None."""
        return self.objects.get((kind, namespace, name))

    def list(self, kind: str, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
        """The objects of ``kind`` in ``namespace`` whose labels match ``k=v,...``."""
        return [obj for (k, ns, _), obj in self.objects.items()
                if k == kind and ns == namespace and _matches(obj, selector)]

    def delete(self, kind: str, namespace: str, name: str, tolerate: Iterable[int] = (404,)) -> bool:
        """Remove the object; whether it existed."""
        return self.objects.pop((kind, namespace, name), None) is not None

    def named(self, kind: str, name: str) -> dict[str, Any]:
        """The only object of ``kind`` and ``name`` (any namespace); a clear error if none."""
        found = [obj for (k, _, n), obj in self.objects.items() if k == kind and n == name]
        if not found:
            raise LookupError(f"the pod uses {kind} {name!r}, which neither the operator nor the manifest made")
        return found[0]
