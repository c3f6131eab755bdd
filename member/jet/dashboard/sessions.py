"""Who may see the dashboard: the cluster token as a bearer header or a session cookie.

``GET /login?token=<cluster token>`` sets the cookie ``jet_session`` (HttpOnly, SameSite=Lax) to an
HMAC of the token, the same on every member, so no member keeps sessions; it is compared in
constant time like the bearer header. A POST that authenticates with the cookie must also carry
the header ``X-Jet-Dashboard: 1`` (a page of another site cannot add it without a CORS preflight,
which members never grant) and, when the browser sends ``Origin``, come from the member's own
origin.
"""

from __future__ import annotations

import hashlib
import hmac
import html
from http.cookies import CookieError, SimpleCookie
from typing import Any

SESSION_COOKIE = "jet_session"
CSRF_HEADER = "X-Jet-Dashboard"


def session_value(token: str) -> str:
    """The session cookie's value for the cluster ``token``: hex HMAC-SHA256(token, ``jet-dashboard-session``)."""
    return hmac.new(token.encode("utf-8"), b"jet-dashboard-session", hashlib.sha256).hexdigest()


def session_cookie_header(token: str) -> str:
    """The ``Set-Cookie`` value that signs a browser in."""
    return f"{SESSION_COOKIE}={session_value(token)}; Path=/; HttpOnly; SameSite=Lax"


def has_session(cookie_header: str | None, token: str) -> bool:
    """Whether a ``Cookie`` header carries this cluster's session (constant-time comparison)."""
    if not cookie_header:
        return False
    try:
        cookies = SimpleCookie(cookie_header)
    except CookieError:
        return False
    morsel = cookies.get(SESSION_COOKIE)
    presented = (morsel.value if morsel is not None else "").encode("utf-8")
    return hmac.compare_digest(presented, session_value(token).encode("utf-8"))


def same_origin_post(headers: Any, host: str | None) -> str | None:
    """Why a cookie-authenticated POST is refused as cross-site, or None when it is not."""
    if headers.get(CSRF_HEADER) != "1":
        return f"a dashboard POST needs the header '{CSRF_HEADER}: 1' (or 'Authorization: Bearer <token>')"
    origin = headers.get("Origin")
    if origin and host and origin not in (f"http://{host}", f"https://{host}"):
        return f"a dashboard POST from origin {origin!r} is refused; only this member's own pages may post"
    return None


def login_page(message: str = "") -> bytes:
    """The small form a browser without a session gets: it asks for the cluster token."""
    note = f'<p class="login-error" data-testid="login-error">{html.escape(message)}</p>' if message else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Jet dashboard: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;background:#f4f6f8;display:flex;justify-content:center;
padding-top:12vh}}form{{background:#fff;padding:2em;border-radius:8px;box-shadow:0 1px 4px #0002;
min-width:22em}}input{{width:100%;padding:.5em;margin:.5em 0 1em;box-sizing:border-box}}
button{{padding:.5em 1.5em}}.login-error{{color:#b00020}}</style></head>
<body><form action="/login" method="get" data-testid="login-form"><h1>Jet dashboard</h1>{note}
<label for="token">Cluster token</label>
<input id="token" name="token" type="password" autocomplete="off" autofocus>
<button type="submit">Sign in</button>
<p><small>On Kubernetes the token is in the JetJob's Secret (see docs/dashboard.md).</small></p>
</form></body></html>
""".encode("utf-8")
