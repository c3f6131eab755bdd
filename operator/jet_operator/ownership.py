"""The identity of one JetJob and the metadata that makes an object its child."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jet_operator import constants, naming


@dataclass(frozen=True)
class JobRef:
    """The identity of one JetJob: what children are named after and owned by."""

    name: str
    namespace: str
    uid: str
    generation: int = 1

    def owner_reference(self) -> dict[str, Any]:
        """The ownerReference that makes the JetJob its child's controller (GC deletes the child)."""
        return {
            "apiVersion": f"{constants.API_GROUP}/{constants.API_VERSION}",
            "kind": constants.KIND,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def object_meta(job: JobRef, name: str, component: str) -> dict[str, Any]:
    """``metadata`` of a child: name, namespace, labels and the owner reference."""
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": naming.labels(job.name, component),
        "ownerReferences": [job.owner_reference()],
    }
