"""MCP servers over stdio, started by the agent: their tools join the agent's own, with schemas.

fleet.yaml's `tools.mcp` names each server's command. The official `mcp` SDK is asynchronous and
the tool loop is not: the servers' sessions live on one event loop in a thread of their own,
each held open by a task until the agent stops, and every call is handed to that loop. A server
that does not start is reported and left out; the agent keeps its other tools.

A server's tool `T` is offered as `SERVER__T` (OpenAI function names allow [A-Za-z0-9_-], at most
64 characters); `allow` limits which of its tools are offered at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_runtime.protocol import McpServerSpec, offered_name
from agent_runtime.tools.registry import Tool, ToolError

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 10.0


@dataclass
class _Server:
    spec: McpServerSpec
    session: Any = None
    tools: list[Any] = field(default_factory=list)
    problem: str = ""
    ready: threading.Event = field(default_factory=threading.Event)
    stop: asyncio.Event | None = None
    task: Future[None] | None = None


class McpServers:
    """The agent's MCP servers, their sessions and their tools."""

    def __init__(self, specs: list[McpServerSpec], cwd: Path, log_dir: Path) -> None:
        self._servers = [_Server(spec) for spec in specs]
        self._cwd = cwd
        self._log_dir = log_dir
        # Made only when there are servers to hold: an agent without MCP pays nothing.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> list[str]:
        """Start every server and list its tools; returns the problems (one line per server that failed)."""
        if not self._servers:
            return []
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="mcp-servers", daemon=True)
        self._thread.start()
        for server in self._servers:
            server.task = asyncio.run_coroutine_threadsafe(self._hold(server), loop)
        for server in self._servers:
            if not server.ready.wait(server.spec.timeout_s):
                server.problem = server.problem or f"did not start within {server.spec.timeout_s:g}s"
        return [f"MCP server {s.spec.name}: {s.problem}" for s in self._servers if s.problem]

    def tools(self) -> list[Tool]:
        found = []
        for server in self._servers:
            if server.problem or server.session is None:
                continue
            allowed = set(server.spec.allow) if server.spec.allow is not None else None
            for tool in server.tools:
                if allowed is not None and tool.name not in allowed:
                    continue
                found.append(self._as_tool(server, tool))
        return found

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        for server in self._servers:
            if server.stop is not None:
                loop.call_soon_threadsafe(server.stop.set)
        for server in self._servers:
            if server.task is not None:
                try:
                    server.task.result(STOP_TIMEOUT_S)
                except (FutureTimeout, OSError, RuntimeError) as failed:
                    log.warning("MCP server %s did not stop cleanly: %s", server.spec.name, failed)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(STOP_TIMEOUT_S)
        if not thread.is_alive():
            loop.close()

    async def _hold(self, server: _Server) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import get_default_environment, stdio_client

        server.stop = asyncio.Event()
        spec = server.spec
        params = StdioServerParameters(
            command=resolve_program(spec.command[0]),
            args=spec.command[1:],
            env={**get_default_environment(), **_runtime_path(), **spec.env},
            cwd=self._cwd,
        )
        self._log_dir.mkdir(parents=True, exist_ok=True)
        try:
            with (self._log_dir / f"mcp-{spec.name}.log").open("a") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    listed = await session.list_tools()
                    server.tools, server.session = list(listed.tools), session
                    server.ready.set()
                    await server.stop.wait()
        except (OSError, RuntimeError, ValueError, asyncio.CancelledError) as failed:
            server.problem = f"{type(failed).__name__}: {failed}"
            log.warning("MCP server %s failed: %s", spec.name, server.problem)
        except BaseExceptionGroup as failed:  # anyio task groups raise groups
            server.problem = _describe(failed)
            log.warning("MCP server %s failed: %s", spec.name, server.problem)
        finally:
            server.session = None
            server.ready.set()

    def _as_tool(self, server: _Server, tool: Any) -> Tool:
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        description = tool.description or tool.title or tool.name
        return Tool(
            offered_name(server.spec.name, tool.name),
            f"[MCP {server.spec.name}] {description}"[:1024],
            schema,
            self._caller(server, tool.name),
            source="mcp",
        )

    def _caller(self, server: _Server, name: str) -> Callable[[dict[str, Any]], str]:
        def call(arguments: dict[str, Any]) -> str:
            session, loop = server.session, self._loop
            if session is None or loop is None:
                raise ToolError(
                    f"MCP server {server.spec.name} is not running ({server.problem or 'stopped'})"
                )
            future = asyncio.run_coroutine_threadsafe(
                session.call_tool(name, arguments, read_timeout_seconds=server.spec.timeout_s), loop
            )
            try:
                result = future.result(server.spec.timeout_s + 5.0)
            except FutureTimeout:
                future.cancel()
                raise ToolError(
                    f"no answer from MCP server {server.spec.name} within {server.spec.timeout_s:g}s"
                ) from None
            except _call_failures() as failed:
                raise ToolError(f"MCP server {server.spec.name}: {failed}") from None
            return _result_text(server.spec.name, name, result)

        return call


def _describe(group: BaseExceptionGroup[BaseException]) -> str:
    """The leaf errors of a task group's failure (a group says only how many it holds)."""
    leaves: list[str] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            leaves.append(_describe(error))
        else:
            leaves.append(f"{type(error).__name__}: {error}")
    return "; ".join(leaves)


def _result_text(server: str, tool: str, result: Any) -> str:
    parts = []
    for content in getattr(result, "content", None) or []:
        text = getattr(content, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[{getattr(content, 'type', 'content')} not shown]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, sort_keys=True))
    text = "\n".join(parts) or "(no output)"
    if getattr(result, "is_error", False):
        raise ToolError(f"{server} {tool}: {text}")
    return text


def resolve_program(program: str) -> str:
    """`python`/`python3` is the agent's own interpreter (its packages are the server's); a bare
    name found next to that interpreter (a virtualenv's scripts) is taken from there; anything
    else is looked up on the PATH by the SDK."""
    if program in ("python", "python3"):
        return sys.executable
    if "/" not in program:
        beside = Path(sys.executable).parent / program
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
    return program


def _call_failures() -> tuple[type[BaseException], ...]:
    """What a call to a server may raise: the SDK's protocol errors, a closed or broken stream."""
    import anyio
    from mcp.shared.exceptions import MCPError

    return (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError, TimeoutError, OSError)


def _runtime_path() -> dict[str, str]:
    """Where the agent finds programs and packages (PATH with a virtualenv's bin, PYTHONPATH with
    the image's package folders), handed to the server: the SDK's default environment has neither."""
    return {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if os.environ.get(name)}
