"""The part of the agent's client that needs only the standard library: its token, its kept-alive
HTTP connections to the orchestrator, and the two calls a new agent process makes before it loads
the rest of its runtime (its config and its first check-in, see `agent_runtime.transport.boot`).

`agent_runtime.transport.client.OrchestratorClient` is this client with the channel and the wire
models added; a process holds one of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from agent_runtime.process.settings import read_token
from agent_runtime.transport.httpclient import HttpClient, http_client

# `agent_runtime.protocol.AGENT_API_PREFIX`, which this module cannot import (pydantic).
AGENT_ROUTES = "/agent/v1"


class RouteAnswer(NamedTuple):
    """A route's status and its body, as sent."""

    status: int
    body: bytes

    def message(self) -> str:
        """The error body's message (or the start of the body), to log."""
        try:
            return str(json.loads(self.body).get("message", ""))[:200]
        except (ValueError, AttributeError):
            return self.body[:200].decode("utf-8", "replace")


class BaseClient:
    """Calls with the agent's bearer token, read from its file (it may be rotated)."""

    def __init__(self, base_url: str, token_file: Path) -> None:
        self.base_url = base_url.rstrip("/")
        self.token_file = token_file
        self._token = ""
        self._plain = http_client(self.base_url)

    @property
    def token(self) -> str:
        return self._token or self.reread_token()

    def reread_token(self) -> str:
        """The token from its file; SettingsError when it cannot be read."""
        self._token = read_token(self.token_file)
        return self._token

    def close(self) -> None:
        self._plain.close()

    @property
    def plain_http(self) -> HttpClient:
        return self._plain

    def config_over_http(self) -> RouteAnswer:
        """`GET /agent/v1/config`: the config as served (JSON). HttpError when unanswered."""
        return self._route("GET", "/config")

    def checkin_over_http(self, checkin: Mapping[str, object]) -> RouteAnswer:
        """`POST /agent/v1/checkin` with a CheckIn's fields. HttpError when unanswered."""
        return self._route("POST", "/checkin", json.dumps(dict(checkin)).encode())

    def _route(self, method: str, path: str, content: bytes | None = None) -> RouteAnswer:
        headers = {"Authorization": f"Bearer {self.token}"}
        if content is not None:
            headers["Content-Type"] = "application/json"
        response = self._plain.send(method, AGENT_ROUTES + path, content=content, headers=headers)
        return RouteAnswer(response.status_code, response.content)
