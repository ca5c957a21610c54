"""The web dashboard: static HTML, JS and CSS served by the orchestrator itself.

Opening `/?token=<operator token>` once sets an HttpOnly cookie and redirects to `/`, so the
token leaves the address bar; the page's own API calls and its EventSource then carry the
cookie. Everything is served from the package: no CDN, no build step, works offline.

The orchestrator also listens on the agents' network; the dashboard's pages are refused to
peers that are not on this machine unless the app sets `state.dashboard_remote = True`.
"""

from __future__ import annotations

import ipaddress
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel

from orchestrator.api.csrf import COOKIE
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.services import Services

REMOTE_FLAG = "dashboard_remote"


def local_peers_only(request: Request) -> None:
    """Refuse network peers that are not loopback (agents reach this app on their network)."""
    if getattr(request.app.state, REMOTE_FLAG, False) or request.client is None:
        return
    try:
        peer = ipaddress.ip_address(request.client.host.split("%", 1)[0])
    except ValueError:
        return  # not an IP peer (a Unix socket, an in-process test client)
    if not peer.is_loopback:
        raise HTTPException(status_code=403, detail="the dashboard is served to this machine only")


router = APIRouter(tags=["dashboard"], include_in_schema=False, dependencies=[Depends(local_peers_only)])

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# The sign-in page carries its few styles inline.
LOGIN_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
}

LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Flotilla: sign in</title>
<link rel="icon" href="data:,">
<style>body{font:16px system-ui,sans-serif;margin:15vh auto;max-width:36rem;color:#1f2937;padding:0 1rem}
code{background:#f3f4f6;padding:.1rem .3rem;border-radius:4px}</style></head>
<body><h1>Flotilla dashboard</h1>
<p>This dashboard needs the operator token.</p>
<p>Open the address that <code>flotilla up</code> printed (it ends in <code>?token=...</code>).
The token changes each time the orchestrator starts.</p></body></html>
"""


def static_dir() -> Traversable:
    return resources.files("orchestrator.dashboard").joinpath("static")


def _static_response(name: str) -> Response:
    suffix = name[name.rfind(".") :] if "." in name else ""
    media = STATIC_TYPES.get(suffix)
    asset = static_dir().joinpath(name)
    # Only plain file names with a known type: nothing else in the package can be fetched.
    if media is None or "/" in name or name.startswith(".") or not asset.is_file():
        return Response(status_code=404, content=f"no dashboard file {name!r}", media_type="text/plain")
    return Response(content=asset.read_bytes(), media_type=media, headers=SECURITY_HEADERS)


def _is_operator(services: Services, token: str | None) -> bool:
    principal = services.tokens.identify(token) if token else None
    return principal is not None and principal.is_operator


@router.get("/", response_class=HTMLResponse)
def dashboard(
    request: Request, services: ServicesDep, token: Annotated[str | None, Query()] = None
) -> Response:
    if token is not None:
        if not _is_operator(services, token):
            return HTMLResponse(LOGIN_PAGE, status_code=401, headers=LOGIN_HEADERS)
        redirect = RedirectResponse("/", status_code=303)
        # Secure over TLS (directly, or behind a proxy whose scheme the server trusts).
        secure = request.url.scheme == "https"
        redirect.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/", secure=secure)
        return redirect
    if not _is_operator(services, _header_or_cookie(request)):
        return HTMLResponse(LOGIN_PAGE, status_code=401, headers=LOGIN_HEADERS)
    return _static_response("index.html")


def _header_or_cookie(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value:
        return value.strip()
    return request.cookies.get(COOKIE)


@router.get("/dashboard")
def dashboard_alias() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)


class DashboardAgent(BaseModel):
    name: str
    role: str
    model: str


class DashboardInfo(BaseModel):
    """What the page needs even when no other data source answers: the fleet and its agents."""

    fleet: str
    agents: list[DashboardAgent]


@router.get("/dashboard/info.json")
def dashboard_info(_: OperatorDep, services: ServicesDep) -> DashboardInfo:
    config = services.fleet.config
    agents = [
        DashboardAgent(name=name, role=agent.role, model=config.model_of(name))
        for name, agent in sorted(config.agents.items())
    ]
    return DashboardInfo(fleet=config.fleet, agents=agents)


@router.get("/dashboard/static/{name}")
def dashboard_static(name: str, _: OperatorDep) -> Response:
    return _static_response(name)
