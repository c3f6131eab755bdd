"""A KubernetesEmulator with the realism the operator tests need (kmock is pinned to 0.8:
this glue uses its private parts).

Added over the stock emulator:
- create stamps uid, resourceVersion, creationTimestamp, generation; pods start Pending;
- patches bump resourceVersion (JSON patches get a replace op), spec patches bump generation,
  and a failed JSON-patch test op answers 422 (the object changed), not 500;
- server-side apply of a missing object creates it (a real API server does);
- list and watch honour ``labelSelector`` (``k=v``, ``k!=v``, ``k``, ``!k``);
- list returns a resourceVersion and a watch from it replays only newer objects; a watch
  subscribes to changes before it replays (no lost event);
- ``/api/v1/namespaces[/<name>[/<sub>]]`` parses as the namespaces resource, not as a prefix.
"""

from __future__ import annotations

import datetime
import itertools
import uuid
from typing import Any, AsyncIterator

import aiohttp.web
import jsonpatch
import kmock
from kmock._internal.k8s import KubernetesError
from kmock._internal import enums, parsing, rendering

_stock_parse_path = parsing.parse_path


def _parse_path(path: str) -> parsing.ParsedPath:
    parts = path.strip("/").split("/")
    namespace_itself = len(parts) in (3, 4) or (len(parts) == 5 and parts[4] in ("status", "finalize"))
    if parts[:3] == ["api", "v1", "namespaces"] and namespace_itself:
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
    _last_version = 0

    def _next_version(self) -> str:
        Emulator._last_version = next(self._versions)
        return str(Emulator._last_version)

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

    async def _render_error(self, exc: Exception) -> aiohttp.web.StreamResponse:
        # A failed "test" op means the object changed meanwhile: the API server answers 422.
        if isinstance(exc, jsonpatch.JsonPatchTestFailed):
            exc = KubernetesError(status=422, reason="Invalid", message=str(exc))
        return await super()._render_error(exc)

    async def _serve_list(self, request: rendering.Request) -> rendering.Payload:
        result = await super()._serve_list(request)
        result["metadata"]["resourceVersion"] = str(Emulator._last_version)
        selector = request.params.get("labelSelector")
        if selector:
            result["items"] = [item for item in result["items"] if _matches(_labels(item), selector)]
        return result

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        # Stock kmock snapshots the objects, then subscribes to the bus: an event in between is
        # lost. Subscribe first, under the same lock that writers hold, then replay the snapshot.
        yield b""
        assert request.resource is not None
        selector = request.params.get("labelSelector") or ""
        bus = self._buses[request.resource]
        since = request.params.get("resourceVersion") or ""
        async with self._lock:
            mark = await bus.mark()
            objs = self._KubernetesEmulator__get_objs(request, strict=False)
            events = [{"type": "ADDED", "object": obj.raw} for obj in objs if not obj.deleted]
        if since.isdigit():  # a watch after a list: only what changed since the list
            events = [e for e in events
                      if int(e["object"]["metadata"].get("resourceVersion") or 0) > int(since)]
        try:
            for event in events:
                if _matches(_labels(event["object"]), selector):
                    yield event
            async for event in bus.stream(since=mark):
                meta = (event.get("object") or {}).get("metadata") or {}
                if (self._KubernetesEmulator__check(request, request.resource, meta.get("namespace"),
                                                    meta.get("name"), strict=False)
                        and _matches(_labels(event.get("object")), selector)):
                    yield event
        finally:
            await bus.unmark(mark)
