"""fleet.yaml's `tools:` section of an agent: MCP servers and human approval of tool calls."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.config.units import parse_duration

SERVER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,23}$")
# The model sees an MCP tool as SERVER__TOOL (OpenAI function names: [a-zA-Z0-9_-]{1,64}).
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PEER_OPERATION = re.compile(r"^[a-z0-9-]+\.[A-Za-z0-9_-]+$")
MCP_SEPARATOR = "__"
Approval = Literal["required", "none"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolRule(_Strict):
    """What a call to one tool takes before it runs."""

    approval: Approval = Field(
        default="none",
        description="required: every call waits for an operator's `flotilla approve ID` (or is denied)",
    )


class McpServerConfig(_Strict):
    """An MCP server spoken to over stdio, started by the agent inside its own container or process."""

    name: str = Field(description="Short name: the server's tools are offered as NAME__TOOL")
    command: list[str] = Field(
        min_length=1,
        description="Program and arguments, e.g. [mcp-server-time, --local-timezone, UTC]. The program "
        "must be in the agent image (see docs/tools.md) or, for the process runtime, on the PATH",
    )
    package: str | None = Field(
        default=None,
        description="pip requirement that provides the server, e.g. mcp-server-time==2026.10.19: added, "
        "with the MCP SDK, to the fleet's agent image (docker runtime) by `flotilla up`",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment of the server process (no secrets: the agent sees them)",
    )
    allow: list[str] | None = Field(
        default=None, description="The server's tools the agent may use (their MCP names); unset: all"
    )
    approval: Approval = Field(
        default="none", description="required: every tool of this server needs approval"
    )
    timeout_s: float = Field(default=60.0, gt=0, le=600, description="Longest a start or one call may take")

    @field_validator("package")
    @classmethod
    def _package(cls, value: str | None) -> str | None:
        problem = requirement_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SERVER_NAME.match(value):
            raise ValueError(
                f"invalid MCP server name {value!r}: lowercase letters, digits and '_', starting with a letter"
            )
        return value


REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*([<>=!~]=?[A-Za-z0-9.*+!_-]+\s*,?\s*)*$"
)


def requirement_problem(value: str) -> str | None:
    if not REQUIREMENT.match(value):
        return f"invalid package {value!r}: give a pip requirement such as mcp-server-time==2026.10.19"
    return None


class ToolsConfig(_Strict):
    """An agent's extra tools and the rules on calling any tool (built-in, peer operation or MCP)."""

    mcp: list[McpServerConfig] = Field(default_factory=list, description="MCP servers run by the agent")
    rules: dict[str, ToolRule] = Field(
        default_factory=dict,
        description="Per tool: a built-in name (write_file), an MCP tool (SERVER__TOOL) or a peer "
        "operation (PEER.OPERATION), e.g. {write_file: {approval: required}}",
    )
    approval_timeout: str = Field(
        default="10m", description="A call waiting for approval longer than this is denied (30s, 15m, 2h)"
    )

    @field_validator("approval_timeout")
    @classmethod
    def _timeout(cls, value: str) -> str:
        parse_duration(value)
        return value

    @model_validator(mode="after")
    def _unique_and_named(self) -> ToolsConfig:
        names = [server.name for server in self.mcp]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"MCP server names must be unique: {', '.join(twice)} given twice")
        for key in self.rules:
            if not (TOOL_NAME.match(key) or PEER_OPERATION.match(key)):
                raise ValueError(
                    f"rules: {key!r} is neither a tool name (letters, digits, '_', '-') nor PEER.OPERATION"
                )
        return self

    def rule_problems(self, talks_to: list[str]) -> list[str]:
        """Rules that name an MCP server this agent does not declare, or a peer it may not ask."""
        servers = sorted(server.name for server in self.mcp)
        found = []
        for key in self.rules:
            server, separator, _ = key.partition(MCP_SEPARATOR)
            if separator and server not in servers:
                declared = ", ".join(servers) or "none"
                found.append(f"tools.rules: {key!r} names no MCP server of this agent (declared: {declared})")
            peer, dot, _ = key.partition(".")
            if dot and peer not in talks_to:
                found.append(f"tools.rules: {key!r} names {peer!r}, which is not in this agent's talks_to")
        return found

    @property
    def approval_timeout_s(self) -> float:
        return parse_duration(self.approval_timeout)

    def approval_required(self) -> list[str]:
        """Tool names (and PEER.OPERATION keys) whose calls wait for an operator, sorted."""
        found = {key for key, rule in self.rules.items() if rule.approval == "required"}
        for server in self.mcp:
            if server.approval == "required":
                found.add(f"{server.name}{MCP_SEPARATOR}*")
        return sorted(found)
