"""Which dashboard request goes where, and who may make it (:mod:`jet.dashboard.sessions`).

Pages: ``/`` (the one-page app) and ``/ui/<file>`` (its script and style); ``/login?token=`` signs
a browser in and redirects to ``/``. API: ``/api/...`` (:mod:`jet.dashboard.api`). Every one of
them needs the cluster token: ``Authorization: Bearer <token>`` or the session cookie. The
read-only job-status credential the operator holds may read the API, never post. A page asked
without a session gets the login form (401); an API call without credentials 401 JSON.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable
from urllib.parse import parse_qs

from jet.dashboard.api import ApiError, DashboardApi
from jet.dashboard.sessions import has_session, login_page, same_origin_post, session_cookie_header

log = logging.getLogger("jet.dashboard")

#: The static files of the app, by their URL path, with their content type.
STATIC_FILES = {"/": ("index.html", "text/html; charset=utf-8"),
                "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
                "/ui/app.css": ("app.css", "text/css; charset=utf-8")}
#: The largest POST body read (an export's name and flag).
MAX_BODY_BYTES = 16 * 1024

#: What a bearer header carries: the cluster token (may act), the job-status credential (may
#: read), or neither.
FULL, READ_ONLY = "full", "read-only"


@dataclass
class Reply:
    """One HTTP answer."""

    code: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(code: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(code, json.dumps(body).encode("utf-8"), "application/json", headers or {})


def static_file(name: str) -> bytes:
    """A file of ``jet/dashboard/static`` (shipped as package data)."""
    return resources.files("jet.dashboard").joinpath("static", name).read_bytes()


class DashboardRoutes:
    """The dashboard's pages and API on one member."""

    def __init__(self, api: DashboardApi | None, token: str, bearer: Callable[[str | None], str | None]) -> None:
        """``bearer(authorization header)``: :data:`FULL`, :data:`READ_ONLY` or None."""
        self._api = api
        self._token = token
        self._bearer = bearer

    def handles(self, path: str) -> bool:
        return path in STATIC_FILES or path == "/login" or path == "/api" or path.startswith("/api/")

    def get(self, path: str, query: str, headers: Any) -> Reply:
        if path == "/login":
            return self._login(query)
        access = self._access(headers)
        if path in STATIC_FILES:
            if access is None:
                return Reply(401, login_page(), "text/html; charset=utf-8")
            name, content_type = STATIC_FILES[path]
            return Reply(200, static_file(name), content_type, {"Cache-Control": "no-cache"})
        if access is None:
            return _unauthorized()
        return self._api_call(lambda api: self._get_api(api, path))

    def post(self, path: str, headers: Any, body: bytes) -> Reply:
        access = self._access(headers)
        if access is None:
            return _unauthorized()
        if access == READ_ONLY:
            return json_reply(403, {"error": "the job-status credential may read the API only; "
                                             "actions need the cluster token"})
        if access == "session":
            refused = same_origin_post(headers, headers.get("Host"))
            if refused:
                log.warning("refused a POST to %s: %s", path, refused)
                return json_reply(403, {"error": refused})
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["api", "jobs"]:
            return json_reply(404, {"error": f"no such API path {path!r}; actions are POST /api/jobs/<id>/<action>"})
        try:
            payload = json.loads(body or b"{}")
        except ValueError as e:
            return json_reply(400, {"error": f"the request body is not JSON: {e}"})
        if not isinstance(payload, dict):
            return json_reply(400, {"error": f"the request body must be a JSON object, got {type(payload).__name__}"})
        return self._api_call(lambda api: api.act(parts[2], parts[3], payload))

    def _access(self, headers: Any) -> str | None:
        """FULL or READ_ONLY (a bearer header), "session" (the cookie), or None."""
        presented = self._bearer(headers.get("Authorization"))
        if presented is not None:
            return presented
        return "session" if has_session(headers.get("Cookie"), self._token) else None

    def _login(self, query: str) -> Reply:
        token = parse_qs(query).get("token", [""])[0]
        if token and self._bearer("Bearer " + token) == FULL:
            return Reply(303, b"", "text/plain", {"Location": "/", "Set-Cookie": session_cookie_header(self._token)})
        if token:
            log.warning("a sign-in with a wrong token was refused")
        return Reply(401, login_page("That is not this cluster's token." if token else ""),
                     "text/html; charset=utf-8")

    @staticmethod
    def _get_api(api: DashboardApi, path: str) -> Any:
        parts = path.strip("/").split("/")
        if parts == ["api", "cluster"]:
            return api.cluster()
        if parts == ["api", "jobs"]:
            return api.jobs()
        if len(parts) == 3 and parts[:2] == ["api", "jobs"]:
            return api.job(parts[2])
        raise ApiError(404, f"no such API path {path!r}; try /api/cluster, /api/jobs or /api/jobs/<id>")

    def _api_call(self, call: Callable[[DashboardApi], Any]) -> Reply:
        if self._api is None:
            return json_reply(404, {"error": "this member serves no dashboard API"})
        try:
            return json_reply(200, call(self._api))
        except ApiError as e:
            return json_reply(e.code, {"error": str(e)})


def _unauthorized() -> Reply:
    return json_reply(401, {"error": "the dashboard API needs 'Authorization: Bearer <cluster token>' or a "
                                     "session from /login?token=<cluster token>"},
                      {"WWW-Authenticate": 'Bearer realm="jet"'})
