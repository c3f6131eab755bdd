"""Merge a user's ``podTemplate`` over the operator's default pod template.

Mappings merge key by key; lists of named things (containers, volumes, env, ports, ...) merge
item by item on ``name`` (a user's ``member`` container patches ours, new names are appended);
any other value from the user replaces the default.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

# List fields whose items are identified by a key, as in Kubernetes' strategic merge patch.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "env": "name",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "tolerations": "key",
    "hostAliases": "ip",
}


def merge_pod_template(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``defaults`` with ``overrides`` merged over it; neither argument is modified."""
    return _merge(copy.deepcopy(dict(defaults)), overrides)


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        current = base.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            base[key] = _merge(current, value)
        elif isinstance(current, list) and isinstance(value, list) and key in _MERGE_KEYS:
            base[key] = _merge_named_list(current, value, _MERGE_KEYS[key])
        else:
            base[key] = copy.deepcopy(value)
    return base


def _merge_named_list(base: list[Any], overrides: list[Any], merge_key: str) -> list[Any]:
    merged = list(base)
    for item in overrides:
        if not isinstance(item, Mapping) or merge_key not in item:
            merged.append(copy.deepcopy(item))
            continue
        for index, existing in enumerate(merged):
            if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]:
                merged[index] = _merge(existing, item)
                break
        else:
            merged.append(copy.deepcopy(item))
    return merged
