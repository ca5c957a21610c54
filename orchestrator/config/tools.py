"""fleet.yaml's `tools:` section of an agent: MCP servers, HTTP requests made by the orchestrator
and human approval of tool calls."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.config.browser import BrowserPolicy, SearchProvider
from orchestrator.config.egress import HttpPolicy
from orchestrator.config.exec_tool import ExecPolicy
from orchestrator.config.secrets import secret_handles
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
    """An MCP server: over stdio, started by the agent inside its own container or process (`command`),
    or over streamable HTTP, reached only by the orchestrator, which holds its credentials (`url`)."""

    name: str = Field(description="Short name: the server's tools are offered as NAME__TOOL")
    command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="stdio server: program and arguments, e.g. [mcp-server-time, --local-timezone, UTC]. "
        "The program must be in the agent image (see docs/tools.md) or, for the process runtime, on the PATH",
    )
    url: str | None = Field(
        default=None,
        description="HTTP server (streamable HTTP): its MCP endpoint, e.g. https://search.example/mcp. "
        "Only the orchestrator connects to it; the agent calls its tools through the orchestrator",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP server: headers the orchestrator sends, e.g. {Authorization: 'Bearer {{secret:search_token}}'}. "
        "{{secret:NAME}} is a secret declared under secrets: (${NAME}, a host environment variable, is "
        "deprecated); the agent never sees the values",
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

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not HTTP_URL.match(value):
            raise ValueError(
                f"invalid url {value!r}: give an http:// or https:// address such as https://host/mcp"
            )
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for header, template in value.items():
            if not HEADER_NAME.match(header):
                raise ValueError(f"invalid header name {header!r}")
            problem = template_problem(template)
            if problem:
                raise ValueError(f"header {header}: {problem}")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if self.command is not None and self.url is not None:
            raise ValueError(
                "url and command are both given: a server is either run by the agent (command) "
                "or reached over HTTP by the orchestrator (url)"
            )
        if self.command is None and self.url is None:
            raise ValueError("give command (a stdio server run by the agent) or url (an HTTP server)")
        if self.url is not None:
            stdio_only = [name for name in ("package", "env") if name in self.model_fields_set]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)}: only for a stdio server (command), not with url")
        elif self.headers:
            raise ValueError("headers: only for an HTTP server (url), not with command")
        return self

    @property
    def is_http(self) -> bool:
        return self.url is not None

    def header_secrets(self) -> dict[str, list[str]]:
        """Per header, the declared secrets its value names as {{secret:NAME}}."""
        return {header: secret_handles(template) for header, template in self.headers.items()}

    def header_variables(self) -> dict[str, list[str]]:
        """Per header, the host environment variables its value names."""
        return {header: ENV_REFERENCE.findall(template) for header, template in self.headers.items()}

    def stdio_dump(self) -> dict[str, object]:
        """The settings of a stdio server as they were before HTTP servers existed (stable hashes)."""
        return self.model_dump(mode="json", exclude={"url", "headers"})


HTTP_URL = re.compile(r"^https?://[^/\s?#]+(/\S*)?$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def template_problem(template: str) -> str | None:
    """What is wrong with a header value: every `$` must start a `${NAME}` reference."""
    if "$" in ENV_REFERENCE.sub("", template):
        return f"{template!r}: write an environment variable as ${{NAME}} (letters, digits, '_')"
    if "\n" in template or "\r" in template:
        return "a header value is one line"
    return None


REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?\s*([<>=!~]=?[A-Za-z0-9.*+!_-]+\s*,?\s*)*$"
)


def requirement_problem(value: str) -> str | None:
    if not REQUIREMENT.match(value):
        return f"invalid package {value!r}: give a pip requirement such as mcp-server-time==2026.10.19"
    return None


class ToolsConfig(_Strict):
    """An agent's extra tools and the rules on calling any tool (built-in, peer operation or MCP)."""

    mcp: list[McpServerConfig] = Field(
        default_factory=list,
        description="MCP servers: stdio ones run by the agent (command), HTTP ones reached through the orchestrator (url)",
    )
    http: HttpPolicy | None = Field(
        default=None,
        description="The http_request tool: requests the orchestrator makes for the agent under this "
        "policy (allowed URLs, methods, secrets, approval, daily budget); unset: no such tool",
    )
    exec: ExecPolicy | None = Field(
        default=None,
        description="The exec tool: commands run in a throwaway sandbox with these caps, "
        "e.g. {timeout_s: 10}; unset: no exec",
    )
    browser: BrowserPolicy | None = Field(
        default=None,
        description="The browser_* tools: a headless browser in a throwaway sandbox whose pages open "
        "only what tools.http allows, with these caps ({} for the defaults); unset: no browser",
    )
    search: SearchProvider | None = Field(
        default=None,
        description="The web_search tool: the provider the orchestrator calls under tools.http; unset: none",
    )
    rules: dict[str, ToolRule] = Field(
        default_factory=dict,
        description="Per tool: a built-in name (write_file), a host tool (http_request, exec, notify), "
        "an MCP tool (SERVER__TOOL) or a peer operation (PEER.OPERATION), e.g. "
        "{write_file: {approval: required}, notify: {approval: required}}",
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
        for section in ("browser", "search"):
            if getattr(self, section) is not None and self.http is None:
                raise ValueError(
                    f"tools.{section} needs tools.http: its requests go out under that policy "
                    "(allowed URLs, addresses, daily budget)"
                )
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

    @property
    def stdio_servers(self) -> list[McpServerConfig]:
        return [server for server in self.mcp if not server.is_http]

    @property
    def http_servers(self) -> list[McpServerConfig]:
        return [server for server in self.mcp if server.is_http]

    def approval_required(self) -> list[str]:
        """Tool names (and PEER.OPERATION keys) whose calls wait for an operator, sorted."""
        found = {key for key, rule in self.rules.items() if rule.approval == "required"}
        for server in self.mcp:
            if server.approval == "required":
                found.add(f"{server.name}{MCP_SEPARATOR}*")
        if self.http is not None:
            found.update(self.http.approval_required())
        return sorted(found)
