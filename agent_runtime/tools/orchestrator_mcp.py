"""Tools of HTTP MCP servers, which only the orchestrator reaches: listed and called over the agent API.

The orchestrator holds these servers' credentials and their allow-lists; the agent sees each tool
as `SERVER__TOOL` with its schema, next to its own, and a call goes agent -> orchestrator -> server.
A call the orchestrator refuses or cannot make comes back to the model as `ERROR: ...`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from agent_runtime.tools.registry import Tool, ToolError, ToolSource
from agent_runtime.transport.errors import OrchestratorError
from agent_runtime.transport.http import AgentHttp
from agent_runtime.transport.httpclient import Response

log = logging.getLogger(__name__)

# The orchestrator answers within the server's own timeout (at most 600 s) plus its connection.
CALL_TIMEOUT_S = 660.0


class OrchestratorMcp:
    """The agent's side of the orchestrator's MCP routes, over the agent's authorized client."""

    def __init__(self, http: AgentHttp, item_id: Callable[[], str | None]) -> None:
        self._http = http
        self._item_id = item_id

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
        label = f"MCP {tool.server}" if tool.kind == "mcp" else "runs on the orchestrator"
        description = f"[{label}] {tool.description or tool.name}"[:1024]
        source: ToolSource = "host" if tool.kind == "host" else "orchestrator_mcp"
        return Tool(tool.name, description, schema, self._caller(tool.name), source=source)

    def _caller(self, name: str) -> Callable[[dict[str, Any]], str]:
        def call(arguments: dict[str, Any]) -> str:
            body = OrchestratorToolCall(name=name, arguments=arguments, item_id=self._item_id())
            response = self._request("POST", "/tools/call", body)
            try:
                result = OrchestratorToolResult.model_validate_json(response.content)
            except ValidationError as bad:
                raise ToolError(f"unexpected answer from the orchestrator: {bad}") from None
            if not result.ok:
                raise ToolError(result.output)
            return result.output

        return call

    def _request(self, method: str, path: str, body: BaseModel | None) -> Response:
        try:
            return self._http.send(method, f"{AGENT_API_PREFIX}{path}", body, timeout_s=CALL_TIMEOUT_S)
        except OrchestratorError as failed:
            raise ToolError(str(failed)) from None
