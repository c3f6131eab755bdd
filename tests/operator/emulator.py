"""A KubernetesEmulator with the realism the operator tests need (kmock is pinned to 0.8:
this glue uses its private parts).

Added over the stock emulator:
- create stamps uid, resourceVersion, creationTimestamp, generation; pods start Pending;
- patches bump resourceVersion (JSON patches get a replace op), spec patches bump generation;
- server-side apply of a missing object creates it (a real API server does);
- list and watch honour ``labelSelector`` (``k=v``, ``k!=v``, ``k``, ``!k``);
- ``/api/v1/namespaces[/<name>[/<sub>]]`` parses as the namespaces resource, not as a prefix.
"""

from __future__ import annotations

import datetime
import itertools
import uuid
from typing import Any, AsyncIterator

import aiohttp.web
import kmock
from kmock._internal import enums, parsing, rendering

_stock_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) in (3, 4, 5):
        return parsing.ParsedPath(
            group="", version="v1", plural="namespaces",
            name=parts[3] if len(parts) > 3 else None,
            subresource=parts[4] if len(parts) > 4 else None,
        )
    return _stock_parse_path(path)


parsing.parse_path = _parse_path


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key.rstrip("=")) != value.lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _labels(obj: Any) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


class Emulator(kmock.KubernetesEmulator):
    """See the module docstring."""

    _versions = itertools.count(1)

    def _next_version(self) -> str:
        return str(next(self._versions))

    def _stamp_new(self, request: rendering.Request, obj: dict[str, Any]) -> None:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if request.namespace:
            meta.setdefault("namespace", request.namespace)
        meta["uid"] = str(uuid.uuid4())
        meta["resourceVersion"] = self._next_version()
        meta["creationTimestamp"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta["generation"] = 1
        if request.resource is not None and request.resource.plural == "pods":
            obj.setdefault("status", {}).setdefault("phase", "Pending")

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.resource is not None and request.action == enums.action.CREATE and isinstance(request.data, dict):
            self._stamp_new(request, request.data)
        elif request.resource is not None and request.action == enums.action.UPDATE:
            key = (request.resource, request.namespace, request.name)
            current = self._find(key)
            missing = current is None or current.deleted
            content_type = request.headers.get("Content-Type", "")
            if "apply-patch" in content_type and missing and isinstance(request.data, dict):
                return await self._create_by_apply(request, key)
            if isinstance(request.data, dict):
                meta = request.data.setdefault("metadata", {})
                meta["resourceVersion"] = self._next_version()
                if not missing and request.subresource is None and "spec" in request.data:
                    if request.data["spec"] != current.get("spec"):
                        meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
            elif isinstance(request.data, list):
                request.data.append(
                    {"op": "replace", "path": "/metadata/resourceVersion", "value": self._next_version()}
                )
        return await super()._handle(request)

    def _find(self, key: Any) -> Any:
        try:  # `key in self.objects` is always False in kmock 0.8
            return self.objects[key]
        except KeyError:
            return None

    async def _create_by_apply(self, request: rendering.Request, key: Any) -> aiohttp.web.StreamResponse:
        obj = request.data
        self._stamp_new(request, obj)
        async with self._lock:
            self.objects[key] = obj
            raw = self.objects[key].raw
            await self._buses[request.resource].put({"type": "ADDED", "object": raw})
        return aiohttp.web.json_response(raw, status=201)

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        result = await super()._serve_list(request)
        selector = request.params.get("labelSelector")
        if selector:
            result["items"] = [item for item in result["items"] if _matches(_labels(item), selector)]
        return result

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        selector = request.params.get("labelSelector")
        async for event in super()._serve_watch(request):
            if selector and isinstance(event, dict) and "object" in event:
                if not _matches(_labels(event["object"]), selector):
                    continue
            yield event
