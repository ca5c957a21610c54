"""On the agent address only agent routes answer; loopback serves everything."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator.api.surfaces import AgentSurface, agent_only_host


async def _downstream(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def status_of(agent_url: str, server: str, path: str) -> int:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "server": (server, 8765), "headers": []}
    asyncio.run(AgentSurface(_downstream, lambda: agent_url)(scope, receive, send))
    status: int = sent[0]["status"]
    return status


@pytest.mark.parametrize(
    "path", ["/api/v1/fleet", "/dashboard", "/metrics", "/", "/docs", "/openapi.json", "/hooks/github"]
)
def test_operator_routes_are_not_served_on_the_agent_address(path: str) -> None:
    assert status_of("http://172.30.0.1:8765", "172.30.0.1", path) == 404
    assert status_of("http://172.30.0.1:8765", "127.0.0.1", path) == 200


@pytest.mark.parametrize(
    "path", ["/agent/v1/config", "/agent/v1/channel", "/v1/chat/completions", "/v1/embeddings"]
)
def test_agent_routes_are_served_on_the_agent_address(path: str) -> None:
    assert status_of("http://172.30.0.1:8765", "172.30.0.1", path) == 200


def test_agents_on_loopback_share_the_operators_surface() -> None:
    assert agent_only_host("http://127.0.0.1:8765") is None
    assert agent_only_host("") is None
    assert status_of("http://127.0.0.1:8765", "127.0.0.1", "/api/v1/fleet") == 200
