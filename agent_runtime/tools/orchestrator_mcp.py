"""Tools of HTTP MCP servers, which only the orchestrator reaches: listed and called over the agent API.

The orchestrator holds these servers' credentials and their allow-lists; the agent sees each tool
as `SERVER__TOOL` with its schema, next to its own, and a call goes agent -> orchestrator -> server.
A call the orchestrator refuses or cannot make comes back to the model as `ERROR: ...`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import ValidationError

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from agent_runtime.tools.registry import Tool, ToolError
from agent_runtime.transport.http import no_delay_transport

log = logging.getLogger(__name__)

# The orchestrator answers within the server's own timeout (at most 600 s) plus its connection.
CALL_TIMEOUT_S = 660.0


class OrchestratorMcp:
    """The agent's side of the orchestrator's MCP routes, with this agent's bearer token."""

    def __init__(
        self,
        base_url: str,
        token: Callable[[], str],
        item_id: Callable[[], str | None],
        http: httpx.Client | None = None,
    ) -> None:
        self._token = token
        self._item_id = item_id
        self._http = http or httpx.Client(
            base_url=base_url.rstrip("/"), timeout=CALL_TIMEOUT_S, transport=no_delay_transport(base_url)
        )

    def close(self) -> None:
        self._http.close()

    def tools(self) -> tuple[list[Tool], list[str]]:
        """The offered tools, and the problems of the servers that could not be listed."""
        try:
            response = self._request("GET", "/tools", None)
            listed = OrchestratorTools.model_validate_json(response.content)
        except (ToolError, ValidationError) as failed:
            return [], [f"orchestrator MCP tools not listed: {failed}"]
        return [self._as_tool(tool) for tool in listed.tools], listed.problems

    def _as_tool(self, tool: OrchestratorTool) -> Tool:
        schema = dict(tool.input_schema)
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        description = f"[MCP {tool.server}] {tool.description or tool.name}"[:1024]
        return Tool(tool.name, description, schema, self._caller(tool.name), source="orchestrator_mcp")

    def _caller(self, name: str) -> Callable[[dict[str, Any]], str]:
        def call(arguments: dict[str, Any]) -> str:
            body = OrchestratorToolCall(name=name, arguments=arguments, item_id=self._item_id())
            response = self._request("POST", "/tools/call", body.model_dump_json().encode())
            try:
                result = OrchestratorToolResult.model_validate_json(response.content)
            except ValidationError as bad:
                raise ToolError(f"unexpected answer from the orchestrator: {bad}") from None
            if not result.ok:
                raise ToolError(result.output)
            return result.output

        return call

    def _request(self, method: str, path: str, content: bytes | None) -> httpx.Response:
        try:
            response = self._http.request(
                method,
                f"{AGENT_API_PREFIX}{path}",
                content=content,
                headers={"authorization": f"Bearer {self._token()}", "content-type": "application/json"},
            )
        except httpx.HTTPError as failed:
            raise ToolError(f"orchestrator unreachable: {failed}") from None
        if not response.is_success:
            raise ToolError(_refusal(response))
        return response


def _refusal(response: httpx.Response) -> str:
    """The orchestrator's reason (its error body's message), else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}: {response.text[:300]}"
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str):
        return message
    return f"HTTP {response.status_code}: {response.text[:300]}"
