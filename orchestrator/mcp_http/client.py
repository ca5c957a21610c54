"""One connection to an HTTP MCP server with the official SDK (streamable HTTP): list its tools,
call one. A connection lasts one request of the agent, so a server restarted meanwhile costs
nothing and no session has to be kept alive between calls.

The headers hold the server's credentials: secrets declared in fleet.yaml (`{{secret:NAME}}`), or
the deprecated `${NAME}` host environment variables. They are filled in here, when the client is
made; any message that leaves this module has their values replaced by handles or blanked out.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from orchestrator.config.tools import ENV_REFERENCE, McpServerConfig
from orchestrator.secrets import SecretError, SecretStore

CONNECT_TIMEOUT_S = 10.0


class McpServerError(Exception):
    """The server could not be reached, did not answer in time, or refused the request as MCP."""


@dataclass(frozen=True)
class ServerTool:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class CallAnswer:
    ok: bool
    text: str


def resolved_headers(server: McpServerConfig, secrets: SecretStore | None = None) -> dict[str, str]:
    """The headers with each {{secret:NAME}} filled in from the fleet's secrets and each ${NAME}
    replaced by the host's environment variable (both checked by `flotilla validate`)."""
    resolved = {}
    for header, template in server.headers.items():
        value = ENV_REFERENCE.sub(lambda match: os.environ.get(match.group(1), ""), template)
        if secrets is not None:
            try:
                value = secrets.substitute(value)
            except SecretError as unusable:
                raise McpServerError(f"header {header}: {unusable}") from None
        resolved[header] = value
    return resolved


class McpHttpClient:
    def __init__(self, server: McpServerConfig, secrets: SecretStore | None = None) -> None:
        if server.url is None:
            raise ValueError(f"MCP server {server.name} has no url")
        self._server = server
        self._url = server.url
        self._store = secrets
        self._headers = resolved_headers(server, secrets)
        # The values taken from the environment: the credentials to keep out of every message.
        self._secrets = sorted(
            {
                value
                for names in server.header_variables().values()
                for name in names
                if (value := os.environ.get(name))
            },
            key=len,
            reverse=True,
        )

    async def list_tools(self) -> list[ServerTool]:
        async with self._session() as session:
            listed = await session.list_tools()
        return [
            ServerTool(
                name=tool.name,
                description=tool.description or tool.title or tool.name,
                input_schema=dict(tool.input_schema or {}),
            )
            for tool in listed.tools
        ]

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallAnswer:
        async with self._session() as session:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self._server.timeout_s)
        return CallAnswer(ok=not getattr(result, "is_error", False), text=self.redact(_result_text(result)))

    def redact(self, text: str) -> str:
        if self._store is not None:
            text = self._store.redact(text)
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Any]:
        try:
            import anyio
            import httpx2
            from mcp import ClientSession
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client
            from mcp.shared.exceptions import MCPError
        except ImportError as missing:
            raise McpServerError(
                f"the orchestrator cannot speak MCP over HTTP ({missing}): install the MCP SDK 2 with "
                "pip install 'flotilla[orchestrator]'"
            ) from None

        timeout = httpx2.Timeout(
            self._server.timeout_s, connect=min(CONNECT_TIMEOUT_S, self._server.timeout_s)
        )
        failures = (
            MCPError,
            OSError,
            TimeoutError,
            httpx2.HTTPError,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        )
        try:
            with anyio.fail_after(self._server.timeout_s + CONNECT_TIMEOUT_S):
                async with (
                    create_mcp_http_client(headers=self._headers, timeout=timeout) as http,
                    streamable_http_client(self._url, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    yield session
        except failures as failed:
            raise McpServerError(self.redact(_describe(failed))) from None
        except BaseExceptionGroup as failed:  # anyio task groups raise groups
            raise McpServerError(self.redact(_describe(failed))) from None


def _describe(error: BaseException) -> str:
    """The leaf errors of a task group's failure (a group says only how many it holds)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    if isinstance(error, TimeoutError):
        return "no answer in time"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _result_text(result: Any) -> str:
    parts = []
    for content in getattr(result, "content", None) or []:
        text = getattr(content, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(content, 'type', 'content')} not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, sort_keys=True))
    return "\n".join(parts) or "(no output)"
