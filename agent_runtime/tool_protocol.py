"""Wire models of tool calls: approvals an agent waits on, the tools the orchestrator calls for an
agent (HTTP MCP servers), the names and approval keys both sides agree on, and the run records
that carry each call. Re-exported by `agent_runtime.protocol`, where callers import them."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from agent_runtime.wire import WireModel


class RunOutcome(StrEnum):
    OK = "ok"
    IDLE = "idle"
    ERROR = "error"
    SKIPPED = "skipped"
    LIMIT = "limit"


ApprovalState = Literal["pending", "approved", "denied", "expired"]


class ApprovalRequest(WireModel):
    """A tool call that waits for an operator's decision before it runs."""

    key: str = Field(min_length=8, max_length=128, description="Idempotency key: a retry finds the same item")
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    item_id: str | None = None
    run_id: str | None = None
    timeout_s: float = Field(gt=0, le=7 * 24 * 3600, description="Undecided this long, the call is denied")


class ApprovalItem(WireModel):
    id: str
    agent: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    item_id: str | None = None
    run_id: str | None = None
    state: ApprovalState
    reason: str = ""
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None


class ApprovalDecision(WireModel):
    """The operator's answer to an approval item."""

    reason: str = Field(default="", max_length=2000)


class OrchestratorTool(WireModel):
    """A tool the orchestrator runs for the agent: a tool of an HTTP MCP server (kind `mcp`,
    offered as SERVER__TOOL) or one of the orchestrator's own (kind `host`: http_request, exec,
    notify), which act in the world under the agent's policy in fleet.yaml."""

    name: str = Field(description="As offered to the model: SERVER__TOOL, or the host tool's name")
    server: str = Field(description="The MCP server, or for a host tool its family")
    kind: Literal["mcp", "host"] = "mcp"
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class OrchestratorTools(WireModel):
    """The tools the orchestrator offers this agent, and the servers it could not list."""

    tools: list[OrchestratorTool] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class OrchestratorToolCall(WireModel):
    """A call of an orchestrator-held tool. `item_id` is the inbox item being worked: with the tool
    and its arguments it names the approval item of a call that needs one."""

    name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    item_id: str | None = None


class OrchestratorToolResult(WireModel):
    ok: bool
    output: str


# Agreed by both sides: an MCP tool `T` of server `S` is offered as `S__T` (OpenAI function names
# allow [A-Za-z0-9_-], at most 64 characters), and a call needing approval is found again by its key.
MCP_SEPARATOR = "__"
_UNSAFE_IN_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")


def offered_name(server: str, tool: str) -> str:
    """The name the model sees for tool `tool` of MCP server `server`."""
    return f"{server}{MCP_SEPARATOR}{_UNSAFE_IN_TOOL_NAME.sub('_', tool)}"[:64]


def approval_key(item_id: str | None, tool: str, arguments: dict[str, Any]) -> str:
    """The idempotency key of the approval item of one call (the inbox item, the tool, its arguments)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(f"{item_id or '-'}\n{tool}\n{canonical}".encode()).hexdigest()
    return f"approval-{digest[:40]}"


HTTP_REQUEST = "http_request"


def needs_approval(required: list[str], tool: str, arguments: dict[str, Any]) -> str | None:
    """The name a call's approval is asked under (ToolSettings.approval_required), or None."""
    if tool in required:
        return tool
    server, separator, _ = tool.partition(MCP_SEPARATOR)
    if separator and f"{server}{MCP_SEPARATOR}*" in required:
        return tool
    if tool == HTTP_REQUEST:
        method = f"{tool}.{str(arguments.get('method', 'GET')).upper()}"
        if method in required:
            return method
    if tool == "ask_agent":
        operation = f"{arguments.get('agent')}.{arguments.get('operation')}"
        if operation in required:
            return operation
    return None


class ToolCallRecord(WireModel):
    """One tool call of a run: what was called, whether it worked, and any approval it waited for."""

    name: str
    ok: bool
    source: Literal["builtin", "mcp", "peer", "orchestrator_mcp", "host"] = Field(
        default="builtin",
        description="mcp: a stdio server run by the agent; orchestrator_mcp: an HTTP server the "
        "orchestrator called for the agent; host: a tool the orchestrator ran itself (http_request, "
        "exec, notify); records written before host tools had their own source say orchestrator_mcp",
    )
    approval: Literal["approved", "denied", "expired"] | None = None
    approval_id: str | None = None
    duration_s: float = 0.0
    detail: str = ""


class RunRecord(WireModel):
    id: str
    agent: str
    trigger: Literal["operator", "person", "heartbeat", "peer", "hook", "maintenance"]
    item_id: str | None = None
    model: str | None = None
    started_at: datetime
    finished_at: datetime
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    outcome: RunOutcome
    detail: str = ""
    files_changed: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
