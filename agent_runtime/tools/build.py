"""The tool catalog of an agent, in a fixed order (the catalog is part of the cached prefix).

Order: workspace files, identity files, corrections, then memory tools, peer tools, then the
tools of the agent's MCP servers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from agent_runtime.tools.builtin import SharedWrites, correction_tool, file_tools, workspace_tool
from agent_runtime.tools.registry import FailureHook, Gate, Tool, ToolRegistry
from agent_runtime.workspace.files import WorkspaceFiles
from agent_runtime.workspace.learnings import Learnings
from agent_runtime.workspace.versioned import Workspace


def build_tools(
    *,
    workspace: Workspace,
    files: WorkspaceFiles,
    learnings: Learnings,
    memory_tools: Iterable[Tool] = (),
    peer_tools: Iterable[Tool] = (),
    mcp_tools: Iterable[Tool] = (),
    on_failure: FailureHook | None = None,
    gate: Gate | None = None,
    writes_shared: SharedWrites | None = None,
) -> ToolRegistry:
    registry = ToolRegistry(on_failure=on_failure, gate=gate)
    registry.extend(file_tools(files))
    registry.add(workspace_tool(workspace, writes_shared))
    registry.add(correction_tool(learnings, writes_shared))
    registry.extend(memory_tools)
    registry.extend(replace(tool, source="peer") for tool in peer_tools)
    registry.extend(mcp_tools)
    return registry
