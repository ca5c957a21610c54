"""Which routes each listening address serves.

The orchestrator listens on loopback for the operator and on the fleet gateway for agents (see
orchestrator.listeners). On the agent address only the agent surface is served: the agent API
and the LLM gateway. The operator API, the dashboard and /metrics answer 404 there, so that
an operator token that leaked into a container is of no use from inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import ip_address
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from agent_runtime.protocol import AGENT_API_PREFIX, ErrorBody

AGENT_SURFACE = (f"{AGENT_API_PREFIX}/", "/v1/")


def _is_loopback(host: str) -> bool:
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def agent_only_host(agent_url: str) -> str | None:
    """The address that serves agents alone, or None when agents share the operator's loopback."""
    host = urlsplit(agent_url).hostname if agent_url else None
    return host if host and not _is_loopback(host) else None


class AgentSurface:
    """ASGI middleware: requests that arrive on the agent address reach agent routes only."""

    def __init__(self, app: ASGIApp, agent_url_of: Callable[[], str]) -> None:
        self.app = app
        self._agent_url_of = agent_url_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            await _not_here(scope, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        agent_host = agent_only_host(self._agent_url_of())
        server = scope.get("server")
        if agent_host is None or not server or server[0] != agent_host:
            return True
        path: str = scope.get("path", "")
        return path.startswith(AGENT_SURFACE)


async def _not_here(scope: Scope, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = ErrorBody(error="not_found", message="not served on the agent address").model_dump_json().encode()
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
