"""FastAPI dependencies: the wired Services and the authenticated principal.

They are async because they never block: a plain function would cost every request a hop to
the worker thread pool.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from starlette.requests import HTTPConnection

from orchestrator.api.csrf import COOKIE, refuse_cross_site
from orchestrator.control.auth import Principal
from orchestrator.services import Services


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def bearer_token(request: HTTPConnection) -> str | None:
    """The bearer token of a request or a WebSocket handshake: the Authorization header, else the
    `token` query parameter, else the dashboard's cookie. A request that names a credential (a
    header of any scheme, a query token even empty) is judged by it alone: the cookie never
    stands in for a bad one."""
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return token.strip() or None
    # EventSource (SSE) and the dashboard cannot set headers; they pass the token as a query parameter.
    if "token" in request.query_params:
        return request.query_params["token"] or None
    return request.cookies.get(COOKIE)


async def get_principal(request: Request, services: Annotated[Services, Depends(get_services)]) -> Principal:
    return principal_of(request, services)


def principal_of(request: Request, services: Services) -> Principal:
    """The authenticated caller, or HTTP 401."""
    token = bearer_token(request)
    principal = services.tokens.identify(token) if token else None
    if principal is None:
        raise HTTPException(status_code=401, detail="missing or invalid bearer token")
    if _by_cookie_alone(request):
        refuse_cross_site(request, request.method)
    return principal


def _by_cookie_alone(request: HTTPConnection) -> bool:
    """The request's only credential is the cookie a browser attaches by itself."""
    header = request.headers.get("authorization", "")
    return not header and "token" not in request.query_params and COOKIE in request.cookies


async def require_agent(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if principal.is_operator:
        raise HTTPException(status_code=403, detail="this route is for agents")
    return principal


async def require_operator(principal: Annotated[Principal, Depends(get_principal)]) -> Principal:
    if not principal.is_operator:
        raise HTTPException(status_code=403, detail="this route needs the operator token")
    return principal


ServicesDep = Annotated[Services, Depends(get_services)]
AgentDep = Annotated[Principal, Depends(require_agent)]
OperatorDep = Annotated[Principal, Depends(require_operator)]
