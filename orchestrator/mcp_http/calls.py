"""What an agent may do with the HTTP MCP servers of its fleet.yaml `tools.mcp`: list their tools
(only those `allow` lets through) and call one, through the orchestrator.

The agent is untrusted: every call is checked here, whatever the agent's own catalog says. A
tool outside the allow-list, or of a server the agent does not declare, is refused. Approval is
checked before a call reaches any provider (`POST /agent/v1/tools/call`,
`orchestrator.approvals.enforce`). Every call is published as an
`mcp.called` event; a server that cannot be reached also as `mcp.unreachable`, with a log line.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
    offered_name,
)
from orchestrator.config.tools import McpServerConfig, ToolsConfig
from orchestrator.events import EventBus
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.mcp_http.client import McpHttpClient, McpServerError, ServerTool
from orchestrator.secrets import SecretStore

log = logging.getLogger(__name__)

MCP_CALLED = "mcp.called"
MCP_UNREACHABLE = "mcp.unreachable"
DETAIL_CHARS = 300
# The agent keeps far less of a tool's output for its model; this only bounds what crosses the link.
MAX_OUTPUT_CHARS = 256_000


class McpCallRefused(HostToolRefused):
    """The call is not allowed (unknown tool, not in the allow-list, not approved)."""


@dataclass(frozen=True)
class _Target:
    server: McpServerConfig
    tool: ServerTool


class OrchestratorMcpCalls:
    """One agent's HTTP MCP servers, as its fleet.yaml declares them."""

    def __init__(
        self,
        agent: str,
        tools: ToolsConfig,
        events: EventBus,
        *,
        secrets: SecretStore | None = None,
    ) -> None:
        self._agent = agent
        self._secrets = secrets
        self._tools = tools
        self._servers = {server.name: server for server in tools.http_servers}
        self._events = events

    def owns(self, name: str) -> bool:
        prefix, separator, _ = name.partition("__")
        return bool(separator) and prefix in self._servers

    async def list(self) -> OrchestratorTools:
        offered: list[OrchestratorTool] = []
        problems: list[str] = []
        for server in self._servers.values():
            try:
                listed = await self._client(server).list_tools()
            except McpServerError as failed:
                problems.append(self._unreachable(server, "list tools", str(failed)))
                continue
            offered += [
                OrchestratorTool(
                    name=offered_name(server.name, tool.name),
                    server=server.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                )
                for tool in listed
                if _allowed(server, tool.name)
            ]
        return OrchestratorTools(tools=offered, problems=problems)

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        server = self._server_of(request.name)
        self._check_allowed_by_name(server, request.name)
        started = time.monotonic()
        try:
            client = self._client(server)
            target = await self._target(client, server, request.name)
            answer = await client.call(target.tool.name, request.arguments)
        except McpServerError as failed:
            message = self._unreachable(server, f"call {request.name}", str(failed))
            self._record(request.name, server, False, time.monotonic() - started, message)
            return OrchestratorToolResult(ok=False, output=message)
        duration = time.monotonic() - started
        self._record(request.name, server, answer.ok, duration, "" if answer.ok else answer.text)
        if not answer.ok:
            return OrchestratorToolResult(
                ok=False, output=_bounded(f"{server.name} {target.tool.name}: {answer.text}")
            )
        return OrchestratorToolResult(ok=True, output=_bounded(answer.text))

    def _client(self, server: McpServerConfig) -> McpHttpClient:
        return McpHttpClient(server, self._secrets)

    def _server_of(self, name: str) -> McpServerConfig:
        prefix, separator, _ = name.partition("__")
        server = self._servers.get(prefix) if separator else None
        if server is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise McpCallRefused(
                f"{name} is not a tool of an HTTP MCP server of agent {self._agent} (its servers: {known})"
            )
        return server

    def _check_allowed_by_name(self, server: McpServerConfig, name: str) -> None:
        if server.allow is not None and name not in {
            offered_name(server.name, tool) for tool in server.allow
        }:
            allowed = ", ".join(server.allow) or "none"
            reason = f"{name} is not in the allow-list of MCP server {server.name} (allowed: {allowed})"
            raise self._refused(name, server, reason)

    async def _target(self, client: McpHttpClient, server: McpServerConfig, name: str) -> _Target:
        for tool in await client.list_tools():
            if offered_name(server.name, tool.name) == name and _allowed(server, tool.name):
                return _Target(server, tool)
        raise self._refused(name, server, f"MCP server {server.name} has no tool offered as {name}")

    def _refused(self, name: str, server: McpServerConfig, reason: str) -> McpCallRefused:
        log.warning("agent %s: MCP call refused: %s", self._agent, reason)
        self._record(name, server, False, 0.0, f"refused: {reason}")
        return McpCallRefused(reason)

    def _unreachable(self, server: McpServerConfig, doing: str, problem: str) -> str:
        message = f"MCP server {server.name} ({server.url}) could not {doing}: {problem}"
        log.warning("agent %s: %s", self._agent, message)
        self._events.publish(
            MCP_UNREACHABLE, self._agent, server=server.name, url=server.url, problem=problem
        )
        return message

    def _record(self, name: str, server: McpServerConfig, ok: bool, duration_s: float, detail: str) -> None:
        self._events.publish(
            MCP_CALLED,
            self._agent,
            tool=name,
            server=server.name,
            ok=ok,
            duration_s=round(duration_s, 3),
            detail=detail[:DETAIL_CHARS],
        )


def _bounded(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n[... output cut: {MAX_OUTPUT_CHARS} of {len(text)} characters sent]"


def _allowed(server: McpServerConfig, tool: str) -> bool:
    return server.allow is None or tool in server.allow
