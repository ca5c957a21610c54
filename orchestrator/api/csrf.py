"""Cross-site request forgery guard for the dashboard's cookie.

The dashboard's cookie is the one credential a browser attaches by itself, so a request it
authenticates and that changes something must prove it came from the dashboard's own page:

- it carries the `X-Flotilla-Dashboard` header, which a cross-site form cannot send and a
  cross-site script cannot add without a CORS preflight that this app never grants; and
- its `Origin` (or, lacking one, `Sec-Fetch-Site`) names this same origin.

Requests that carry the token themselves (bearer header, `?token=`) are not ambient and are not
checked: a page on another site cannot know the token. A request that names a token is judged
by that token alone: an empty or wrong one is a 401, never a fall-through to the cookie
(`orchestrator.api.deps.bearer_token`). Over TLS the cookie is `Secure`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import HTTPException
from starlette.requests import HTTPConnection

CSRF_HEADER = "x-flotilla-dashboard"
COOKIE = "flotilla_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def refuse_cross_site(request: HTTPConnection, method: str) -> None:
    """HTTP 403 for a cookie-authenticated request that changes something and is not same-origin."""
    if method.upper() in SAFE_METHODS:
        return
    if not request.headers.get(CSRF_HEADER):
        raise HTTPException(
            status_code=403,
            detail=f"a request authenticated by the dashboard cookie needs the {CSRF_HEADER} header",
        )
    if not _same_origin(request):
        raise HTTPException(status_code=403, detail="cross-site request refused")


def _same_origin(request: HTTPConnection) -> bool:
    origin = request.headers.get("origin")
    if origin:
        host = request.headers.get("host", "")
        parts = urlsplit(origin)
        return parts.scheme in {"http", "https"} and parts.netloc == host
    # Without an Origin header, browsers that send Fetch metadata still say where it came from.
    site = request.headers.get("sec-fetch-site")
    return site in (None, "same-origin", "none")
